/* The canonical combine tree: the one order in which a round's leaf results are added.
 *
 *   tree(lo, hi) = leaf lo                                   if hi - lo == 1
 *                = tree(lo, lo + p) + tree(lo + p, hi)       otherwise,
 *   p = the largest power of two strictly less than hi - lo; the addition is elementwise float32
 *   left[i] + right[i], left operand first.
 *
 * A plan may place the tree's nodes on different roles, but never reorders it. */
#ifndef ALPHA_TREE_H
#define ALPHA_TREE_H

#include <stdint.h>

/* The largest power of two strictly less than count (count >= 2). */
uint32_t tree_split(uint32_t count);

/* out[i] = ((base[i] + rights[n-1][i]) + ...) + rights[0][i] for i < len: a chain of the
 * tree's additions in one pass, the last operand added first (n = 1: one addition). out may
 * be base itself, which a compiler's overlap check would otherwise send to one float at a
 * time. */
void tree_add_chain(float *out, const float *base, const float *const *rights, uint32_t n,
                    uint64_t len);

#endif
