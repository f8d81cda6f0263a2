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

/* Computes leaf `leaf` into out (n floats, already zeroed) and returns its loss. */
typedef float (*tree_leaf_fn)(void *context, uint32_t leaf, float *out);

/* The largest power of two strictly less than count (count >= 2). */
uint32_t tree_split(uint32_t count);
/* Scratch vectors tree_reduce needs for `leaves` leaves: ceil(log2 leaves). */
uint32_t tree_depth(uint32_t leaves);

/* Evaluates tree(0, leaves) into out (n floats) and returns the same tree over the leaf losses.
 * Leaves are computed in order 0, 1, ..., leaves - 1. scratch holds tree_depth(leaves) vectors
 * of n floats. */
float tree_reduce(uint32_t leaves, uint64_t n, float *out, float **scratch, tree_leaf_fn leaf,
                  void *context);

#endif
