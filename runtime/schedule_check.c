/* Checking ALPHA_ROLE before anything runs (schedule.h): the ops' fields one by one, their
 * order, then one dry round with checkpoint ops included, then the folding of COMPUTE into
 * COMBINE and the sizes of the tables. Every problem refuses program-invalid, naming the op. */
#include <stdlib.h>
#include <string.h>

#include "refusal.h"
#include "schedule.h"
#include "tree.h"

static const char *const OP_NAMES[] = {
    "?", "COMPUTE", "COMBINE", "SEND", "RECV", "APPLY", "SEND_PARAMS", "RECV_PARAMS",
    "CHECKPOINT", "ACK_RECV", "ACK_SEND", "PUBLISH", "NORM_SEND", "NORM_RECV",
};

/* Whether [lo, hi) is a node of the canonical tree over `leaves` leaves. */
static int is_node(uint32_t leaves, uint32_t lo, uint32_t hi)
{
    uint32_t a = 0, b = leaves;
    while (a != lo || b != hi) {
        if (b - a == 1)
            return 0;
        uint32_t mid = a + tree_split(b - a);
        if (hi <= mid)
            b = mid;
        else if (lo >= mid)
            a = mid;
        else
            return 0;
    }
    return 1;
}

static _Noreturn void invalid(const struct alpha_role *r, uint32_t i, const char *why)
{
    const struct alpha_op *op = &r->ops[i];
    refuse(REFUSAL_PROGRAM_INVALID, "ALPHA_ROLE %s, op %u (%s %u %u, elements %llu+%llu): %s",
           r->name, (unsigned)i + 1, OP_NAMES[op->kind <= ALPHA_OP_NORM_RECV ? op->kind : 0],
           (unsigned)op->a, (unsigned)op->b, (unsigned long long)op->start,
           (unsigned long long)op->count, why);
}

static int uses_link(uint32_t kind)
{
    return kind == ALPHA_OP_SEND || kind == ALPHA_OP_RECV || kind == ALPHA_OP_SEND_PARAMS ||
           kind == ALPHA_OP_RECV_PARAMS || kind == ALPHA_OP_ACK_RECV ||
           kind == ALPHA_OP_ACK_SEND || kind >= ALPHA_OP_NORM_SEND;
}

/* One op's own fields. */
static void check_op(const struct alpha_program *p, const struct alpha_role *r, uint32_t i,
                     int applies)
{
    const struct alpha_op *op = &r->ops[i];
    uint32_t k = op->kind;
    uint64_t own_start = r->state_start, own_count = r->state_count ? r->state_count
                                                                    : p->n_params;
    if (k < ALPHA_OP_COMPUTE || k > ALPHA_OP_NORM_RECV)
        invalid(r, i, "unknown op kind");
    if (k <= ALPHA_OP_RECV && !(op->a < op->b && op->b <= p->leaves))
        invalid(r, i, "the range is empty or outside [0, leaves)");
    if (k >= ALPHA_OP_COMBINE && k <= ALPHA_OP_RECV && !is_node(p->leaves, op->a, op->b))
        invalid(r, i, "not a node of the canonical tree");
    if (uses_link(k) && op->link >= r->n_links)
        invalid(r, i, "no such link");
    if (op->start > p->n_params || op->count > p->n_params - op->start)
        invalid(r, i, "the element range is outside the parameters");
    if ((k == ALPHA_OP_SEND_PARAMS || k == ALPHA_OP_RECV_PARAMS || k >= ALPHA_OP_NORM_SEND) &&
        op->count == 0)
        invalid(r, i, "moves no elements");
    uint64_t start = op->count ? op->start : 0, count = op->count ? op->count : p->n_params;
    if (k == ALPHA_OP_APPLY && !(start == own_start && count == own_count))
        invalid(r, i, "applies the learner to elements whose state the role does not hold");
    if (k == ALPHA_OP_CHECKPOINT) {
        if (op->flags & ~7u)
            invalid(r, i, "unknown checkpoint flags");
        if ((op->flags & (ALPHA_WRITES_OPTIMIZER | ALPHA_WRITES_SCALARS)) && !applies)
            invalid(r, i, "writes learner state, but the role holds none");
        if ((op->flags & ALPHA_WRITES_OPTIMIZER) &&
            !(start >= own_start && count <= own_count && start - own_start <= own_count - count))
            invalid(r, i, "writes learner state of elements the role does not hold");
    }
}

/* The ops in order: one APPLY at most, after which the round's gradient is only forwarded; the
 * capture's acknowledgement or publication after every shard and child of the role. */
static void check_order(const struct alpha_role *r)
{
    uint32_t applies = 0, closes = 0, captures = 0;
    for (uint32_t i = 0; i < r->n_ops; i++) {
        uint32_t k = r->ops[i].kind;
        if (applies && (k == ALPHA_OP_COMPUTE || k == ALPHA_OP_COMBINE || k == ALPHA_OP_RECV))
            invalid(r, i, "after APPLY a role only forwards the round's gradient");
        if (closes && (k == ALPHA_OP_CHECKPOINT || k == ALPHA_OP_ACK_RECV))
            invalid(r, i, "comes after the capture was acknowledged or published");
        if (closes && (k == ALPHA_OP_ACK_SEND || k == ALPHA_OP_PUBLISH))
            invalid(r, i, "a role acknowledges or publishes a capture once");
        applies += k == ALPHA_OP_APPLY;
        captures += k == ALPHA_OP_CHECKPOINT || k == ALPHA_OP_ACK_RECV;
        closes += k == ALPHA_OP_ACK_SEND || k == ALPHA_OP_PUBLISH;
    }
    /* A role that holds no learner state (a star's hub) combines and forwards, and applies
     * nothing; every other role applies exactly once. */
    if (applies > 1)
        refuse(REFUSAL_PROGRAM_INVALID, "ALPHA_ROLE %s has %u APPLY ops; it needs one at most",
               r->name, (unsigned)applies);
    if (captures && !closes)
        refuse(REFUSAL_PROGRAM_INVALID, "ALPHA_ROLE %s writes captures it never acknowledges "
               "or publishes", r->name);
}

void schedule_check(struct schedule *s, const struct alpha_program *p,
                    const struct alpha_role *r)
{
    memset(s, 0, sizeof *s);
    s->p = p, s->r = r, s->dry = 1;
    if (r->n_roles == 0 || r->index >= r->n_roles || r->n_ops == 0 || !r->ops)
        refuse(REFUSAL_PROGRAM_INVALID, "ALPHA_ROLE %s: role index %u of %u roles, %u ops",
               r->name, (unsigned)r->index, (unsigned)r->n_roles, (unsigned)r->n_ops);
    if (r->state_start > p->n_params || r->state_count > p->n_params - r->state_start)
        refuse(REFUSAL_PROGRAM_INVALID, "ALPHA_ROLE %s holds state of elements outside the "
               "parameters", r->name);
    for (uint32_t i = 0; i < r->n_ops; i++)
        s->applies |= r->ops[i].kind == ALPHA_OP_APPLY;
    for (uint32_t i = 0; i < r->n_ops; i++)
        check_op(p, r, i, s->applies);
    check_order(r);
    s->state_start = r->state_start;
    s->state_count = r->state_count ? r->state_count : p->n_params;
    s->fused = checked_calloc(r->n_ops, 1, "the schedule");
    s->defers = checked_calloc(r->n_ops, 1, "the schedule");
    s->touched = checked_calloc(r->n_ops, sizeof *s->touched, "the schedule");
    s->checkpointing = 1; /* the dry round runs the checkpoint ops too */
    uint32_t failed;
    const char *error = schedule_round(s, &failed);
    if (error)
        invalid(r, failed, error);
    /* Fold each COMPUTE into the COMBINE right after it when the schedule stays valid. */
    for (uint32_t i = 0; i + 1 < r->n_ops; i++) {
        const struct alpha_op *op = &r->ops[i], *next = &r->ops[i + 1];
        if (op->kind != ALPHA_OP_COMPUTE || next->kind != ALPHA_OP_COMBINE ||
            next->a > op->a || op->b > next->b)
            continue;
        s->fused[i] = 1;
        s->n_pieces = 0;
        if (schedule_round(s, &failed))
            s->fused[i] = 0;
    }
    /* Leave the round's last addition to the learner where the schedule stays valid (nothing
     * but APPLY reads the round's gradient) and the kernels can (they define alpha_apply_pair,
     * which a learner that clips does not: clipping reads the gradient whole first). */
    for (uint32_t i = 0; i < r->n_ops && &alpha_apply_pair && !&alpha_clip_hook; i++) {
        const struct alpha_op *op = &r->ops[i];
        if (op->kind != ALPHA_OP_COMBINE || op->a != 0 || op->b != p->leaves)
            continue;
        s->defers[i] = 1;
        s->n_pieces = 0;
        if (schedule_round(s, &failed))
            s->defers[i] = 0;
    }
    s->n_pieces = 0;
    s->most = 0;
    schedule_round(s, &failed); /* sizes the combine walk's vectors and the addition list */
    s->cap_adds = s->n_adds;
    s->adds = checked_calloc(s->cap_adds, sizeof *s->adds, "the combine record");
    /* At a COMBINE every other COMBINE's piece holds a vector (this round's sum or an earlier
     * one's) and the walk needs `most`: that many made now, a real round allocates none. */
    s->combines = 0;
    for (uint32_t i = 0; i < r->n_ops; i++)
        s->combines += r->ops[i].kind == ALPHA_OP_COMBINE;
    s->cap_spare = s->most + (s->combines ? s->combines - 1 : 0);
    s->spare = checked_calloc(s->cap_spare ? s->cap_spare : 1, sizeof(float *), "the combine tree");
    for (uint32_t i = 0; i < s->cap_spare; i++)
        s->spare[s->n_spare++] = checked_calloc(p->n_params + 1, sizeof(float), "the combine tree");
    s->n_pieces = 0;
    s->dry = 0;
}
