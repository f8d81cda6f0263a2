/* Clipping by global norm: the round's sum of squares of the mean gradient, the same float32
 * value on every role whatever the plan, owner count or partitioning.
 *
 * The sum is the canonical tree over the gradient's elements [0, n_params): node [lo, hi)
 * splits at lo + the largest power of two strictly below hi - lo, its value is left + right
 * (left first), a single element's value is its squared mean gradient. The kernels evaluate
 * any node from the gradient (alpha_grad_sqsum); this file only places the nodes: a role
 * evaluates the nodes inside its own elements, NORM_RECV takes the maximal nodes of a child's
 * elements, NORM_SEND sends the maximal nodes of a range (evaluated from what the role holds,
 * recursively by the tree), and APPLY evaluates the root [0, n_params). Whichever role
 * evaluates a node, it is the same node from the same two children, so the same bits.
 *
 * This file is linked only into executables whose kernels clip: nothing else refers to
 * clip_norm_run but the kernels' alpha_clip_hook (schedule.h). */
#include "net.h"
#include "refusal.h"
#include "schedule.h"

/* The kernels of a system that clips (learner_emit.py). */
float alpha_grad_sqsum(const float *grad_sum, uint64_t lo, uint64_t hi);
extern float alpha_clip_sqsum;

enum { COVER_MAX = 130 }; /* the maximal nodes of a range: at most two per level */

static uint64_t split(uint64_t count)
{
    uint64_t p = 1;
    while (p < count - p)
        p *= 2;
    return p;
}

/* The maximal tree nodes inside [a, b) under node [lo, hi), left to right. */
static void cover(uint64_t lo, uint64_t hi, uint64_t a, uint64_t b, struct norm_node *out,
                  uint32_t *n)
{
    if (hi <= a || b <= lo)
        return;
    if (a <= lo && hi <= b) {
        out[(*n)++] = (struct norm_node){lo, hi, 0};
        return;
    }
    uint64_t mid = lo + split(hi - lo);
    cover(lo, mid, a, b, out, n);
    cover(mid, hi, a, b, out, n);
}

static struct norm_node *kept(struct schedule *s, uint64_t lo, uint64_t hi)
{
    for (uint32_t i = 0; i < s->n_norms; i++)
        if (s->norms[i].lo == lo && s->norms[i].hi == hi)
            return &s->norms[i];
    return NULL;
}

/* The round's gradient as the role holds it: piece [0, leaves), whole or in part. */
static const struct piece *gradient(struct schedule *s)
{
    for (uint32_t i = 0; i < s->n_pieces; i++)
        if (s->pieces[i].held && s->pieces[i].lo == 0 && s->pieces[i].hi == s->p->leaves)
            return &s->pieces[i];
    return NULL;
}

static int inside(uint64_t lo, uint64_t hi, uint64_t start, uint64_t count)
{
    return lo >= start && hi - start <= count;
}

/* Whether the role evaluates [lo, hi) from its gradient: a role that receives norm nodes
 * evaluates those of its own elements only (the state it applies), others whatever they
 * hold. */
static int local(struct schedule *s, const struct piece *g, uint64_t lo, uint64_t hi)
{
    if (!g || !inside(lo, hi, g->start, g->count))
        return 0;
    for (uint32_t i = 0; i < s->r->n_ops; i++)
        if (s->r->ops[i].kind == ALPHA_OP_NORM_RECV)
            return inside(lo, hi, s->state_start, s->state_count);
    return 1;
}

/* The value of node [lo, hi): received, evaluated from the gradient, or left + right. */
static const char *node(struct schedule *s, const struct piece *g, uint64_t lo, uint64_t hi,
                        float *out)
{
    struct norm_node *k = kept(s, lo, hi);
    if (k) {
        *out = k->value;
        return NULL;
    }
    if (local(s, g, lo, hi)) {
        *out = s->dry ? 0 : alpha_grad_sqsum(g->data, lo, hi);
        return NULL;
    }
    if (hi - lo == 1)
        return "needs a gradient-norm node it neither evaluates nor receives";
    uint64_t mid = lo + split(hi - lo);
    float left = 0, right = 0;
    const char *error = node(s, g, lo, mid, &left);
    if (!error)
        error = node(s, g, mid, hi, &right);
    *out = left + right;
    return error;
}

const char *clip_norm_run(struct schedule *s, const struct alpha_op *op)
{
    const struct piece *g = gradient(s);
    uint64_t n = s->p->n_params;
    if (op->kind == ALPHA_OP_APPLY) {
        float total = 0;
        const char *error = node(s, g, 0, n, &total);
        alpha_clip_sqsum = total;
        return error;
    }
    struct norm_node nodes[COVER_MAX];
    uint32_t count = 0;
    cover(0, n, op->start, op->start + op->count, nodes, &count);
    if (op->kind == ALPHA_OP_NORM_RECV) {
        float values[COVER_MAX];
        if (!s->dry)
            net_recv_norm(s->net, op->link, op->start, count, values);
        for (uint32_t i = 0; i < count; i++) {
            if (kept(s, nodes[i].lo, nodes[i].hi))
                return "receives a gradient-norm node it already holds";
            s->norms = checked_grow(s->norms, s->n_norms, &s->cap_norms, sizeof *s->norms, 16,
                                    "the gradient norm");
            nodes[i].value = s->dry ? 0 : values[i];
            s->norms[s->n_norms++] = nodes[i];
        }
        return NULL;
    }
    /* NORM_SEND: the values stay where they are until the round's sends are flushed; the dry
     * runs size the array, so a real round never moves it */
    while (s->n_out + count > s->cap_out)
        s->norm_out = checked_grow(s->norm_out, s->cap_out, &s->cap_out, sizeof *s->norm_out,
                                   COVER_MAX, "the gradient norm");
    float *out = s->norm_out + s->n_out;
    s->n_out += count;
    for (uint32_t i = 0; i < count; i++) {
        const char *error = node(s, g, nodes[i].lo, nodes[i].hi, &out[i]);
        if (error)
            return error;
    }
    if (!s->dry)
        net_send_norm(s->net, op->link, op->start, count, out);
    return NULL;
}
