/* The canonical combine tree, evaluated exactly as its definition in tree.h reads. Subtrees are
 * evaluated left first, so leaves are computed in order; the left subtree accumulates into the
 * caller's vector and the right one into the scratch vector of its depth, so a run needs
 * depth + 1 vectors rather than one per leaf. */
#include "tree.h"

#include <string.h>

uint32_t tree_split(uint32_t count)
{
    uint32_t p = 1;
    while (p * 2 < count)
        p *= 2;
    return p;
}

/* ceil(log2 leaves). A node of depth d uses scratch[d]; its left child keeps depth d and its
 * right child (at most half the leaves) gets d + 1, so by induction no node deeper than
 * ceil(log2 leaves) - 1 has children. */
uint32_t tree_depth(uint32_t leaves)
{
    uint32_t depth = 0;
    while (((uint64_t)1 << depth) < leaves)
        depth++;
    return depth;
}

struct tree_walk {
    uint64_t n;
    float **scratch;
    tree_leaf_fn leaf;
    void *context;
};

static float reduce(const struct tree_walk *w, uint32_t lo, uint32_t hi, float *out,
                    uint32_t depth)
{
    if (hi - lo == 1) {
        memset(out, 0, w->n * sizeof(float));
        return w->leaf(w->context, lo, out);
    }
    uint32_t p = tree_split(hi - lo);
    float left_loss = reduce(w, lo, lo + p, out, depth);
    float *right = w->scratch[depth];
    float right_loss = reduce(w, lo + p, hi, right, depth + 1);
    for (uint64_t i = 0; i < w->n; i++)
        out[i] = out[i] + right[i];
    return left_loss + right_loss;
}

float tree_reduce(uint32_t leaves, uint64_t n, float *out, float **scratch, tree_leaf_fn leaf,
                  void *context)
{
    struct tree_walk w = {n, scratch, leaf, context};
    return reduce(&w, 0, leaves, out, 0);
}
