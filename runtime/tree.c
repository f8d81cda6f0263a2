/* The canonical combine tree's shape and its additions (tree.h); schedule.c evaluates it. */
#include "tree.h"

uint32_t tree_split(uint32_t count)
{
    uint32_t p = 1;
    while (p < count - p) /* 2p < count, without overflow */
        p *= 2;
    return p;
}

/* Eight floats as a vector of eight independent float32 additions: the same bits as one at a
 * time. Moved with memcpy (no alignment asked, no aliasing rule bent). */
typedef float floats8 __attribute__((vector_size(32)));

static inline floats8 load8(const float *p)
{
    floats8 v;
    __builtin_memcpy(&v, p, sizeof v);
    return v;
}

void tree_add_chain(float *out, const float *base, const float *const *rights, uint32_t n,
                    uint64_t len)
{
    uint64_t i = 0;
#pragma clang loop unroll(disable) /* memory-bound; the executable has a size budget */
    for (; i + 8 <= len; i += 8) {
        floats8 v = load8(base + i);
        for (uint32_t j = n; j-- > 0;)
            v = v + load8(rights[j] + i);
        __builtin_memcpy(out + i, &v, sizeof v);
    }
#pragma clang loop vectorize(disable) unroll(disable)
    for (; i < len; i++) {
        float v = base[i];
        for (uint32_t j = n; j-- > 0;)
            v = v + rights[j][i];
        out[i] = v;
    }
}
