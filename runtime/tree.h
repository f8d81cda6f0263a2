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

#endif
