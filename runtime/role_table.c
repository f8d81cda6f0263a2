/* The role's schedule (alpha_program.h, alpha_role). A single-process build compiles it in as
 * ALPHA_ROLE. A plan's roles of one kind (target, device, with or without links) share one
 * linked executable in which the schedule is a table of bytes, `alpha_role_table`, in a section
 * of its own (.alpha_role); the build writes each role's table into its own copy of that
 * executable (alpha_core/build/role_table.py), and the role decodes it here at start-up.
 *
 * The table (little-endian, every field read with bounds checks):
 *   "ALPHAROL"  u32 version (1; 0 in a kind's template)  u32 payload length  u8[32] SHA-256
 *   payload: u32 index, n_roles, epoch, listen_port, connect_timeout_ms, io_timeout_ms,
 *            writes_params, checkpoint_every, checkpoint_keep, threads, max_threads,
 *            n_ops, n_links;  u64 state_start, state_count;
 *            strings name, plan, plan_identity, listen_host, checkpoint_dir, resume,
 *            secret_file (each u32 length, the bytes, a NUL);
 *            n_ops x (u32 kind, link, a, b, flags; u64 start, count);
 *            n_links x (u32 peer, accept, port; strings peer_name, host).
 * A table that is not whole (a template never written, a wrong digest, a field past its end)
 * is refused program-invalid before anything runs; the strings are used where they lie. */
#include <stdint.h>
#include <string.h>

#include "alpha_program.h"
#include "refusal.h"
#include "sha256.h"

#define TABLE_HEADER 48u

struct reader {
    const uint8_t *at;
    uint32_t left;
};

static _Noreturn void corrupt(const char *what)
{
    refuse(REFUSAL_PROGRAM_INVALID, "the role table of this executable is not whole: %s", what);
}

static uint32_t u32(struct reader *r)
{
    if (r->left < 4)
        corrupt("it ends inside a number");
    uint32_t v;
    memcpy(&v, r->at, 4);
    r->at += 4, r->left -= 4;
    return v;
}

static uint64_t u64(struct reader *r)
{
    uint64_t lo = u32(r);
    return lo | (uint64_t)u32(r) << 32;
}

static const char *string(struct reader *r)
{
    uint32_t n = u32(r);
    if (n >= r->left || r->at[n] != 0 || memchr(r->at, 0, n) != NULL)
        corrupt("a string is not where its length says");
    const char *s = (const char *)r->at;
    r->at += n + 1, r->left -= n + 1;
    return s;
}

static const struct alpha_role *decode(const uint8_t *table, uint64_t capacity)
{
    static struct alpha_role role;
    if (capacity < TABLE_HEADER || memcmp(table, "ALPHAROL", 8) != 0)
        corrupt("no table");
    uint32_t version, length;
    memcpy(&version, table + 8, 4);
    memcpy(&length, table + 12, 4);
    if (version == 0)
        corrupt("it is a template no role was written into (alpha build writes one per role)");
    if (version != 1 || length > capacity - TABLE_HEADER)
        corrupt("an unknown version or a length past its end");
    uint8_t digest[32];
    struct sha256 h;
    sha256_init(&h);
    sha256_update(&h, table + TABLE_HEADER, length);
    sha256_final(&h, digest);
    if (memcmp(digest, table + 16, 32) != 0)
        corrupt("its SHA-256 does not match its bytes");
    struct reader r = {table + TABLE_HEADER, length};
    role.index = u32(&r);
    role.n_roles = u32(&r);
    role.epoch = u32(&r);
    role.listen_port = u32(&r);
    role.connect_timeout_ms = u32(&r);
    role.io_timeout_ms = u32(&r);
    role.writes_params = u32(&r);
    role.checkpoint_every = u32(&r);
    role.checkpoint_keep = u32(&r);
    role.threads = u32(&r);
    role.max_threads = u32(&r);
    role.n_ops = u32(&r);
    role.n_links = u32(&r);
    role.state_start = u64(&r);
    role.state_count = u64(&r);
    role.name = string(&r);
    role.plan = string(&r);
    role.plan_identity = string(&r);
    role.listen_host = string(&r);
    role.checkpoint_dir = string(&r);
    role.resume = string(&r);
    role.secret_file = string(&r);
    /* each op takes 36 bytes and each link at least 14: counts past what is left are corrupt
     * before anything is allocated for them */
    if (role.n_ops > r.left / 36 || role.n_links > r.left / 14)
        corrupt("more ops or links than it holds");
    struct alpha_op *ops = checked_calloc(role.n_ops ? role.n_ops : 1, sizeof *ops, "the role");
    for (uint32_t i = 0; i < role.n_ops; i++) {
        ops[i].kind = u32(&r);
        ops[i].link = u32(&r);
        ops[i].a = u32(&r);
        ops[i].b = u32(&r);
        ops[i].flags = u32(&r);
        ops[i].start = u64(&r);
        ops[i].count = u64(&r);
    }
    struct alpha_link *links = NULL;
    if (role.n_links)
        links = checked_calloc(role.n_links, sizeof *links, "the role");
    for (uint32_t i = 0; i < role.n_links; i++) {
        links[i].peer = u32(&r);
        links[i].accept = u32(&r);
        links[i].port = u32(&r);
        links[i].peer_name = string(&r);
        links[i].host = string(&r);
    }
    if (r.left != 0)
        corrupt("bytes left over after its last link");
    role.ops = ops;
    role.links = links;
    return &role;
}

const struct alpha_role *alpha_role(void)
{
    static const struct alpha_role *found;
    if (found)
        return found;
    if (&ALPHA_ROLE != NULL)
        found = &ALPHA_ROLE;
    else if (alpha_role_table != NULL)
        found = decode(alpha_role_table, alpha_role_table_bytes);
    else
        refuse(REFUSAL_PROGRAM_INVALID, "this executable holds no role: neither ALPHA_ROLE nor "
               "a role table");
    return found;
}
