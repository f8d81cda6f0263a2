/* NumPy arrays read in place (see arrays.h; the rules are alpha_core/data/arrays.py's). */
#include "arrays.h"

#include <stdio.h>
#include <string.h>

#include "refusal.h"

#define BYTES_LIMIT (1ull << 40)
#define DIGITS_LIMIT 18

static uint32_t u16_at(const uint8_t *b, uint64_t at)
{
    return (uint32_t)b[at] | (uint32_t)b[at + 1] << 8;
}

static uint32_t u32_at(const uint8_t *b, uint64_t at)
{
    return u16_at(b, at) | u16_at(b, at + 2) << 16;
}

static uint64_t u64_at(const uint8_t *b, uint64_t at)
{
    return (uint64_t)u32_at(b, at) | (uint64_t)u32_at(b, at + 4) << 32;
}

/* ---- the header dictionary ---- */

struct text {
    const uint8_t *t;
    uint64_t n, i;
};

static void ws(struct text *p)
{
    while (p->i < p->n && (p->t[p->i] == ' ' || p->t[p->i] == '\t' || p->t[p->i] == '\n'))
        p->i++;
}

static int eat(struct text *p, char c)
{
    ws(p);
    if (p->i < p->n && p->t[p->i] == (uint8_t)c) {
        p->i++;
        return 1;
    }
    return 0;
}

/* A quoted string (no escapes): its first byte and length, or 0. */
static int string(struct text *p, const uint8_t **s, uint64_t *len)
{
    ws(p);
    if (p->i >= p->n || p->t[p->i] != '\'')
        return 0;
    const uint8_t *end = memchr(p->t + p->i + 1, '\'', (size_t)(p->n - p->i - 1));
    if (!end)
        return 0;
    *s = p->t + p->i + 1;
    *len = (uint64_t)(end - *s);
    p->i = (uint64_t)(end - p->t) + 1;
    return 1;
}

static int is_alpha(uint8_t c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

static int integer(struct text *p, uint64_t *v)
{
    ws(p);
    uint64_t start = p->i, value = 0;
    while (p->i < p->n && p->t[p->i] >= '0' && p->t[p->i] <= '9')
        value = value * 10 + (uint64_t)(p->t[p->i++] - '0');
    if (p->i == start || p->i - start > DIGITS_LIMIT)
        return 0;
    *v = value;
    return 1;
}

static int is_key(const uint8_t *s, uint64_t n, const char *key)
{
    return n == strlen(key) && memcmp(s, key, n) == 0;
}

/* descr (its bytes), fortran_order and the shape, or 0 when the text is not the dictionary. */
static int header_dict(struct text *p, const uint8_t **descr, uint64_t *descr_len, int *fortran,
                       struct npy *a)
{
    int seen[3] = {0, 0, 0};
    if (!eat(p, '{'))
        return 0;
    while (!eat(p, '}')) {
        const uint8_t *key;
        uint64_t key_len;
        if (!string(p, &key, &key_len))
            return 0;
        int k = is_key(key, key_len, "descr")           ? 0
                : is_key(key, key_len, "fortran_order") ? 1
                : is_key(key, key_len, "shape")         ? 2
                                                        : -1;
        if (k < 0 || seen[k] || !eat(p, ':'))
            return 0;
        seen[k] = 1;
        if (k == 0) {
            if (!string(p, descr, descr_len))
                return 0;
        } else if (k == 1) {
            ws(p);
            uint64_t start = p->i;
            while (p->i < p->n && is_alpha(p->t[p->i]))
                p->i++;
            if (is_key(p->t + start, p->i - start, "True"))
                *fortran = 1;
            else if (is_key(p->t + start, p->i - start, "False"))
                *fortran = 0;
            else
                return 0;
        } else {
            if (!eat(p, '('))
                return 0;
            a->ndim = 0;
            while (!eat(p, ')')) {
                uint64_t v;
                if (!integer(p, &v) || a->ndim == NPY_MAX_AXES)
                    return 0;
                a->shape[a->ndim++] = v;
                if (!eat(p, ',')) {
                    if (!eat(p, ')'))
                        return 0;
                    break;
                }
            }
        }
        if (!eat(p, ',')) {
            if (!eat(p, '}'))
                return 0;
            break;
        }
    }
    ws(p);
    return p->i == p->n && seen[0] && seen[1] && seen[2];
}

void npy_shape_text(const struct npy *a, char *out, size_t n)
{
    size_t at = (size_t)snprintf(out, n, "(");
    for (uint32_t k = 0; k < a->ndim && at < n; k++)
        at += (size_t)snprintf(out + at, n - at, "%s%llu", k ? ", " : "",
                               (unsigned long long)a->shape[k]);
    if (at < n)
        snprintf(out + at, n - at, "%s)", a->ndim == 1 ? "," : "");
}

static uint32_t itemsize_of(const char *descr)
{
    return descr[2] == '1' ? 1 : descr[2] == '2' ? 2 : descr[2] == '4' ? 4 : 8;
}

static const char *type_name(const char *descr)
{
    static const char *const names[][2] = {{"<f4", "float32"}, {"|u1", "uint8"},
                                           {"<u2", "uint16"},  {"<i4", "int32"},
                                           {"<i8", "int64"}};
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
        if (strcmp(names[k][0], descr) == 0)
            return names[k][1];
    return "?";
}

void npy_read(const uint8_t *buf, uint64_t size, const char *where, const char *const *accepted,
              const char *role, struct npy *out)
{
    memset(out, 0, sizeof *out);
    if (size < 10 || memcmp(buf, "\x93NUMPY", 6) != 0)
        refuse(REFUSAL_DATA_BAD_HEADER, "%s: not a NumPy .npy array (no \\x93NUMPY magic)",
               where);
    unsigned major = buf[6], minor = buf[7];
    if (major < 1 || major > 3 || minor != 0)
        refuse(REFUSAL_DATA_BAD_HEADER,
               "%s: NumPy format version %u.%u is not 1.0, 2.0 or 3.0", where, major, minor);
    uint64_t start, length;
    if (major == 1) {
        start = 10;
        length = u16_at(buf, 8);
    } else {
        if (size < 12)
            refuse(REFUSAL_DATA_BAD_HEADER, "%s: the array header is cut short", where);
        start = 12;
        length = u32_at(buf, 8);
    }
    if (start + length > size)
        refuse(REFUSAL_DATA_BAD_HEADER, "%s: the array header is cut short", where);
    struct text p = {buf + start, length, 0};
    const uint8_t *descr = NULL;
    uint64_t descr_len = 0;
    int fortran = 0;
    if (!header_dict(&p, &descr, &descr_len, &fortran, out))
        refuse(REFUSAL_DATA_BAD_HEADER, "%s: the array header is not a dictionary of 'descr', "
               "'fortran_order' and 'shape'", where);
    if (fortran)
        refuse(REFUSAL_DATA_BAD_HEADER, "%s: the array is in Fortran order; save "
               "numpy.ascontiguousarray(a) instead", where);
    int known = 0;
    for (const char *const *d = accepted; *d && !known; d++)
        if (descr_len == strlen(*d) && memcmp(descr, *d, descr_len) == 0) {
            memcpy(out->descr, *d, descr_len + 1);
            known = 1;
        }
    if (!known) {
        char list[256];
        size_t at = 0;
        list[0] = '\0';
        for (const char *const *d = accepted; *d && at < sizeof list; d++)
            at += (size_t)snprintf(list + at, sizeof list - at, "%s'%s' (%s)",
                                   d == accepted ? "" : ", ", *d, type_name(*d));
        refuse(REFUSAL_DATA_WRONG_DTYPE, "%s: %s of dtype '%.*s'; the %s may be %s", where, role,
               (int)(descr_len > 200 ? 200 : descr_len), (const char *)descr, role, list);
    }
    out->itemsize = itemsize_of(out->descr);
    /* the product, saturated above the limit (a zero axis makes it 0 whatever came before) */
    uint64_t count = 1;
    int zero = 0;
    for (uint32_t k = 0; k < out->ndim; k++) {
        if (out->shape[k] == 0)
            zero = 1;
        else if (count > (2 * BYTES_LIMIT) / out->shape[k])
            count = 2 * BYTES_LIMIT;
        else
            count *= out->shape[k];
    }
    if (zero)
        count = 0;
    uint64_t after = size - (start + length);
    char shape[640];
    npy_shape_text(out, shape, sizeof shape);
    if (count * out->itemsize > BYTES_LIMIT)
        refuse(REFUSAL_DATA_WRONG_SIZE, "%s: shape %s of '%s' holds more than 2^40 bytes, but "
               "%llu bytes follow the header", where, shape, out->descr,
               (unsigned long long)after);
    if (count * out->itemsize != after)
        refuse(REFUSAL_DATA_WRONG_SIZE, "%s: shape %s of '%s' holds %llu bytes, but %llu "
               "bytes follow the header", where, shape, out->descr,
               (unsigned long long)(count * out->itemsize), (unsigned long long)after);
    out->offset = start + length;
    out->count = count;
}

/* ---- .npz: a zip archive of stored .npy members ---- */

/* The sizes and local header offset from the ZIP64 extra field where they are 0xFFFFFFFF. */
static int zip64(const uint8_t *b, uint64_t at, uint64_t end, uint64_t v[3])
{
    while (at + 4 <= end) {
        uint32_t tag = u16_at(b, at), n = u16_at(b, at + 2);
        if (at + 4 + n > end)
            return 0;
        if (tag == 0x0001) {
            uint64_t q = at + 4;
            for (int k = 0; k < 3; k++)
                if (v[k] == 0xFFFFFFFFu) {
                    if (q + 8 > at + 4 + n)
                        return 0;
                    v[k] = u64_at(b, q);
                    q += 8;
                }
            return 1;
        }
        at += 4 + n;
    }
    return v[0] != 0xFFFFFFFFu && v[1] != 0xFFFFFFFFu && v[2] != 0xFFFFFFFFu;
}

void npz_member(const uint8_t *b, uint64_t size, const char *key, const char *path,
                uint64_t *offset, uint64_t *length)
{
    const char *cut = "%s: its zip directory is cut short or inconsistent";
    uint64_t low = size > 22 + 65535 ? size - 22 - 65535 : 0;
    uint64_t eocd = UINT64_MAX;
    for (uint64_t at = size >= 22 ? size - 22 + 1 : 0; at-- > low;)
        if (u32_at(b, at) == 0x06054b50u) {
            eocd = at;
            break;
        }
    if (eocd == UINT64_MAX)
        refuse(REFUSAL_DATA_BAD_ARCHIVE, "%s: not a .npz (zip) archive", path);
    uint64_t entries = u16_at(b, eocd + 10), cd_size = u32_at(b, eocd + 12),
             cd_offset = u32_at(b, eocd + 16);
    if (entries == 0xFFFF || cd_size == 0xFFFFFFFFu || cd_offset == 0xFFFFFFFFu)
        refuse(REFUSAL_DATA_BAD_ARCHIVE, "%s: a ZIP64 directory (more than 4 GiB)", path);
    uint64_t cd_end = cd_offset + cd_size;
    if (cd_end > eocd)
        refuse(REFUSAL_DATA_BAD_ARCHIVE, cut, path);
    size_t key_len = strlen(key);
    char held[1024];
    size_t held_at = 0;
    int names = 0;
    held[0] = '\0';
    uint64_t at = cd_offset;
    for (uint64_t e = 0; e < entries; e++) {
        if (at + 46 > cd_end || u32_at(b, at) != 0x02014b50u)
            refuse(REFUSAL_DATA_BAD_ARCHIVE, cut, path);
        uint32_t flags = u16_at(b, at + 8), method = u16_at(b, at + 10);
        uint64_t v[3] = {u32_at(b, at + 24), u32_at(b, at + 20), u32_at(b, at + 42)};
        uint64_t n = u16_at(b, at + 28), x = u16_at(b, at + 30), c = u16_at(b, at + 32);
        if (at + 46 + n + x + c > cd_end)
            refuse(REFUSAL_DATA_BAD_ARCHIVE, cut, path);
        const uint8_t *name = b + at + 46;
        if (n == key_len + 4 && memcmp(name, key, key_len) == 0 &&
            memcmp(name + key_len, ".npy", 4) == 0) {
            if (!zip64(b, at + 46 + n, at + 46 + n + x, v))
                refuse(REFUSAL_DATA_BAD_ARCHIVE, cut, path);
            uint64_t usize = v[0], csize = v[1], local = v[2];
            if (flags & 1)
                refuse(REFUSAL_DATA_BAD_ARCHIVE, "%s: array `%s` is encrypted", path, key);
            if (method != 0 || csize != usize)
                refuse(REFUSAL_DATA_BAD_ARCHIVE, "%s: array `%s` is compressed "
                       "(numpy.savez_compressed); save the arrays with numpy.savez", path, key);
            if (local + 30 > cd_offset || u32_at(b, local) != 0x04034b50u)
                refuse(REFUSAL_DATA_BAD_ARCHIVE, cut, path);
            uint64_t data = local + 30 + u16_at(b, local + 26) + u16_at(b, local + 28);
            if (data + usize > cd_offset)
                refuse(REFUSAL_DATA_BAD_ARCHIVE, cut, path);
            *offset = data;
            *length = usize;
            return;
        }
        if (n >= 4 && memcmp(name + n - 4, ".npy", 4) == 0 && names < 8 &&
            held_at < sizeof held) {
            held_at += (size_t)snprintf(held + held_at, sizeof held - held_at, "%s`%.*s`",
                                        names ? ", " : "", (int)(n - 4 > 100 ? 100 : n - 4),
                                        (const char *)name);
            names++;
        }
        at += 46 + n + x + c;
    }
    refuse(REFUSAL_DATA_KEY_MISSING, "%s has no array `%s` (it holds %s)", path, key,
           names ? held : "no arrays");
}
