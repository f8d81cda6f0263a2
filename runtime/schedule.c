/* The schedule interpreter (schedule.h). One function runs a round both ways: dry, to check the
 * schedule and size its tables (schedule_check.c), and for real. The runtime's only arithmetic
 * on training values is here and in tree.c: the tree's float32 additions (tree_add_chain) and
 * the round loss divided by the batch. */
#include "schedule.h"

#include <stdlib.h>

#include "batch.h"
#include "evaluate.h"
#include "refusal.h"
#include "tree.h"

static struct piece *find(struct schedule *s, uint32_t lo, uint32_t hi)
{
    for (uint32_t i = 0; i < s->n_pieces; i++)
        if (s->pieces[i].lo == lo && s->pieces[i].hi == hi)
            return &s->pieces[i];
    return NULL;
}

static struct piece *held(struct schedule *s, uint32_t lo, uint32_t hi)
{
    struct piece *q = find(s, lo, hi);
    return q && q->held ? q : NULL;
}

/* An op's element range: count 0 means all n_params. */
static struct range elements(const struct schedule *s, const struct alpha_op *op)
{
    return op->count ? (struct range){op->start, op->count} : (struct range){0, s->p->n_params};
}

static int within(struct range inner, uint64_t start, uint64_t count)
{
    return inner.start >= start && inner.count <= count && inner.start - start <= count - inner.count;
}

/* The entry of piece [lo, hi), made on first use (not yet marked held). */
static struct piece *entry(struct schedule *s, uint32_t lo, uint32_t hi)
{
    struct piece *q = find(s, lo, hi);
    if (!q) {
        s->pieces = checked_grow(s->pieces, s->n_pieces, &s->cap_pieces, sizeof *s->pieces, 8,
                                 "the piece table");
        q = &s->pieces[s->n_pieces++];
        *q = (struct piece){lo, hi, 0, 0, 0, NULL};
    }
    return q;
}

/* The slot of piece [lo, hi), with its storage in a real run (not yet marked held). */
static struct piece *slot(struct schedule *s, uint32_t lo, uint32_t hi)
{
    struct piece *q = entry(s, lo, hi);
    if (!s->dry && !q->data)
        q->data = checked_calloc(s->p->n_params + 1, sizeof(float), "a piece");
    q->start = 0, q->count = s->p->n_params;
    return q;
}

/* Leaf l of the current round into out, plus a chain of vectors: every element (the loss
 * float too) is chain[0] + (chain[1] + (... + (chain[n-1] + g))), g the leaf's own value. The
 * generated kernels add the chain as they store the gradient (alpha_leaf_grad_chain), so the
 * leaf's sum with what the tree adds to it costs one pass over memory; kernels without that
 * entry (a GPU role's) compute the leaf and add the chain in a pass after it. out is never
 * one of the chain's vectors. */
uint32_t alpha_leaf_round, alpha_leaf_index;

static void compute_leaf(struct schedule *s, uint32_t l, float *out, const float *const *chain,
                         uint32_t n)
{
    const struct alpha_program *p = s->p;
    batch_gather(p, s->d, p->rows - p->holdout, s->round, l, s->x, s->y_class, s->y_reg);
    alpha_leaf_round = s->round, alpha_leaf_index = l; /* dropout's mask: (t, l) of this leaf */
    float loss;
    if (&alpha_leaf_grad_chain) {
        loss = alpha_leaf_grad_chain(s->params, s->x, s->y_class, s->y_reg, out, chain, n);
    } else {
        loss = alpha_leaf_grad(s->params, s->x, s->y_class, s->y_reg, out);
        if (n)
            tree_add_chain(out, out, chain, n, p->n_params);
    }
    for (uint32_t j = n; j-- > 0;)
        loss = loss + chain[j][p->n_params];
    out[p->n_params] = loss;
}

/* Leaves [lo, hi) at once (alpha_leaves_grad): their inputs side by side, then one kernel that
 * returns the canonical tree's sum of their gradients and losses. */
static void compute_leaves(struct schedule *s, uint32_t lo, uint32_t hi, float *out)
{
    const struct alpha_program *p = s->p;
    uint64_t rows = p->leaf_size;
    for (uint32_t l = lo; l < hi; l++) {
        uint64_t at = (uint64_t)(l - lo) * rows;
        batch_gather(p, s->d, p->rows - p->holdout, s->round, l, s->x + at * p->features,
                     s->y_class ? s->y_class + at * s->d->targets : NULL,
                     s->y_reg ? s->y_reg + at * p->outputs : NULL);
    }
    alpha_leaf_round = s->round, alpha_leaf_index = lo;
    out[p->n_params] = alpha_leaves_grad(s->params, s->x, s->y_class, s->y_reg, out, hi - lo);
}

/* Whether node [lo, hi) is leaves this walk computes, all of them, none held, in a count the
 * kernels compute at once. */
static int batched(struct schedule *s, uint32_t lo, uint32_t hi)
{
    if (hi - lo < 2 || !&alpha_leaves_batch || lo < s->lazy_lo || hi > s->lazy_hi ||
        !alpha_leaves_batch(hi - lo))
        return 0;
    for (uint32_t i = 0; i < s->n_pieces; i++)
        if (s->pieces[i].held && s->pieces[i].lo < hi && s->pieces[i].hi > lo)
            return 0;
    return 1;
}

/* The tree walk's bookkeeping is compiled for size (the executable has a size budget); the
 * time is spent in the kernels and in the additions above. */
#define WALK __attribute__((minsize))

/* Addition [lo, mid) + [mid, hi), in the order the walk completes them (children first). */
WALK static void record(struct schedule *s, uint32_t lo, uint32_t mid, uint32_t hi)
{
    if (s->n_adds < s->cap_adds)
        s->adds[s->n_adds] = (struct addition){lo, mid, hi};
    s->n_adds++;
}

/* Vectors of n_params + 1 floats for the walk's intermediate sums: taken from the spares and
 * given back, never freed. The dry round counts the most alive at once, and that many are made
 * before round 0 (schedule_check.c), so a real round allocates none. */
WALK static float *take(struct schedule *s)
{
    if (++s->live > s->most)
        s->most = s->live;
    if (s->dry)
        return NULL;
    if (s->n_spare)
        return s->spare[--s->n_spare];
    return checked_calloc(s->p->n_params + 1, sizeof(float), "the combine tree");
}

/* A vector becomes a spare. */
WALK static void spare(struct schedule *s, float *v)
{
    if (!s->dry) {
        s->spare = checked_grow(s->spare, s->n_spare, &s->cap_spare, sizeof *s->spare, 8,
                                "the combine tree");
        s->spare[s->n_spare++] = v;
    }
}

WALK static void give(struct schedule *s, float *v)
{
    s->live--;
    spare(s, v);
}

/* A vector the walk has: a spare it took (owned) or a held piece's (not). */
struct value {
    float *data;
    int owned;
};

enum { CHAIN = 8 }; /* the longest chain added in one pass */

WALK static int evaluate(struct schedule *s, uint32_t lo, uint32_t hi, struct value *chain,
                         uint32_t n, struct value *result, const char **error, int last);

/* The additions of node [lo, hi) and below, children first: what the walk records. */
WALK static void record_tree(struct schedule *s, uint32_t lo, uint32_t hi)
{
    if (hi - lo < 2)
        return;
    uint32_t mid = lo + tree_split(hi - lo);
    record_tree(s, lo, mid);
    record_tree(s, mid, hi);
    record(s, lo, mid, hi);
}

/* The chain's vectors as the kernels and tree_add_chain read them, and given back after. */
WALK static void pointers(const struct value *chain, uint32_t n, const float **out)
{
    for (uint32_t j = 0; j < n; j++)
        out[j] = chain[j].data;
}

WALK static void release(struct schedule *s, struct value *chain, uint32_t n)
{
    for (uint32_t j = 0; j < n; j++)
        if (chain[j].owned)
            give(s, chain[j].data);
}

/* v plus the chain, into a spare: one pass. */
WALK static struct value add_pass(struct schedule *s, const float *v, struct value *chain,
                                  uint32_t n)
{
    struct value out = {take(s), 1};
    const float *rights[CHAIN];
    pointers(chain, n, rights);
    if (!s->dry)
        tree_add_chain(out.data, v, rights, n, s->p->n_params + 1); /* the loss float too */
    release(s, chain, n);
    return out;
}

/* Node [lo, hi) of the canonical tree plus the chain: chain[0] + (chain[1] + (... + (chain[n-1]
 * + node))), in a spare, or the held piece itself when the node is held and the chain empty.
 * A node is its left subtree plus its right, the same floats as right plus left: so the left
 * subtree, computed first, joins the chain of the right one, and a right subtree held whole (a
 * piece received from a child role) joins the chain of the left one. Each addition of the tree
 * is then made where its last operand is produced, in the same pass (a leaf's kernel adds the
 * chain as it stores its gradient): the same additions of the same operands as the recursion,
 * with a pass over memory per leaf instead of one per node. The chain's vectors are given back.
 * `last`: the value is the walk's result, and the COMBINE may leave its last addition to the
 * learner (defers). Where that is two held pieces added (a piece of its own and one received),
 * the addition is left to the learner
 * (alpha_apply_pair), which makes it as it reads them: no vector is written for the sum, and
 * the result is {NULL, 0}. Returns 0 (dry run only) when a leaf is missing or a piece is held
 * in part. */
WALK static int evaluate(struct schedule *s, uint32_t lo, uint32_t hi, struct value *chain,
                         uint32_t n, struct value *result, const char **error, int last)
{
    struct piece *q = held(s, lo, hi);
    if (q && q->count != s->p->n_params) {
        *error = "combines a piece the role holds only in part";
        return 0;
    }
    if (q && last && n == 1 && !chain[0].owned) {
        s->deferred = 1, s->defer_left = q->data, s->defer_right = chain[0].data;
        if (!s->dry) /* the loss float now, as tree_add_chain would add it */
            s->defer_loss = q->data[s->p->n_params] + chain[0].data[s->p->n_params];
        *result = (struct value){NULL, 0};
        return 1;
    }
    if (q) {
        *result = n ? add_pass(s, q->data, chain, n) : (struct value){q->data, 0};
        return 1;
    }
    if (n == CHAIN) { /* the node on its own, then the chain: the walk's depth stays bounded */
        struct value node;
        if (!evaluate(s, lo, hi, NULL, 0, &node, error, 0))
            return 0;
        *result = add_pass(s, node.data, chain, n);
        release(s, &node, 1);
        return 1;
    }
    if (batched(s, lo, hi)) { /* its leaves computed here: one kernel for all of them */
        struct value node = {take(s), 1};
        if (hi - lo > s->batch_leaves)
            s->batch_leaves = hi - lo; /* the dry run sizes the leaves' inputs */
        if (!s->dry)
            compute_leaves(s, lo, hi, node.data);
        record_tree(s, lo, hi);
        if (!n) {
            *result = node;
        } else {
            *result = add_pass(s, node.data, chain, n);
            release(s, &node, 1);
        }
        return 1;
    }
    struct value links[CHAIN];
    for (uint32_t j = 0; j < n; j++)
        links[j] = chain[j];
    if (hi - lo == 1) {
        if (lo < s->lazy_lo || lo >= s->lazy_hi) {
            *error = "needs a leaf piece this role neither computes nor receives first";
            return 0;
        }
        *result = (struct value){take(s), 1};
        const float *rights[CHAIN];
        pointers(links, n, rights);
        if (!s->dry)
            compute_leaf(s, lo, result->data, rights, n);
        release(s, links, n);
        return 1;
    }
    uint32_t mid = lo + tree_split(hi - lo);
    struct piece *right = held(s, mid, hi);
    if (right && right->count != s->p->n_params) {
        *error = "combines a piece the role holds only in part";
        return 0;
    }
    if (right) {
        links[n] = (struct value){right->data, 0};
        if (!evaluate(s, lo, mid, links, n + 1, result, error, last))
            return 0;
    } else {
        if (!evaluate(s, lo, mid, NULL, 0, &links[n], error, 0))
            return 0;
        if (!evaluate(s, mid, hi, links, n + 1, result, error, last))
            return 0;
    }
    record(s, lo, mid, hi);
    return 1;
}

/* The round's loss from piece [0, leaves), when the role holds it. */
static float round_loss(struct schedule *s)
{
    struct piece *total = held(s, 0, s->p->leaves);
    if (total && s->deferred)
        return s->defer_loss / (float)s->p->batch;
    return total && total->data ? total->data[s->p->n_params] / (float)s->p->batch : 0.0f;
}

static const char *checkpoint_op(struct schedule *s, const struct alpha_op *op)
{
    if (!s->checkpointing)
        return NULL;
    uint32_t captured = s->round + 1;
    uint8_t digest[32];
    switch (op->kind) {
    case ALPHA_OP_CHECKPOINT:
        if ((op->flags & ALPHA_WRITES_PARAMS) && !stage_updated(s, elements(s, op)))
            return "writes parameters the round has not updated";
        if ((op->flags & (ALPHA_WRITES_OPTIMIZER | ALPHA_WRITES_SCALARS)) && !s->applied)
            return "writes learner state before the round applies the learner";
        if (!s->dry) {
            if ((op->flags & ALPHA_WRITES_PARAMS) && &alpha_device_fetch_params) {
                struct range w = elements(s, op);
                alpha_device_fetch_params(s->staged, w.start, w.count);
            }
            if ((op->flags & (ALPHA_WRITES_OPTIMIZER | ALPHA_WRITES_SCALARS)) &&
                &alpha_device_fetch_state)
                alpha_device_fetch_state(s->state_staged);
            capture_write(&s->capture, captured, op, s->staged, s->state_staged,
                          s->state_start, s->state_count);
        }
        return NULL;
    case ALPHA_OP_ACK_RECV:
        if (!s->dry) {
            net_recv_ack(s->net, op->link, digest);
            capture_child(&s->capture, captured, s->r->links[op->link].peer_name, digest);
        }
        return NULL;
    case ALPHA_OP_ACK_SEND:
        if (!s->dry)
            net_send_ack(s->net, op->link, capture_seal(&s->capture, captured));
        return NULL;
    default: /* ALPHA_OP_PUBLISH */
        if (!s->dry)
            capture_publish(&s->capture, captured, round_loss(s));
        return NULL;
    }
}

/* Runs op i of the current round; returns why it cannot run (dry runs only), or NULL. */
static const char *run_op(struct schedule *s, uint32_t i)
{
    const struct alpha_op *op = &s->r->ops[i];
    const char *error = NULL;
    struct range e = elements(s, op);
    struct piece *q;
    switch (op->kind) {
    case ALPHA_OP_COMPUTE:
        if (s->fused[i]) {
            s->lazy_lo = op->a, s->lazy_hi = op->b;
            return NULL;
        }
        for (uint32_t l = op->a; l < op->b; l++) {
            if (held(s, l, l + 1))
                return "computes a leaf piece the role already holds";
            q = slot(s, l, l + 1);
            if (!s->dry)
                compute_leaf(s, l, q->data, NULL, 0);
            q->held = 1;
        }
        return NULL;
    case ALPHA_OP_COMBINE:
        if (!held(s, op->a, op->b)) {
            struct value sum;
            q = find(s, op->a, op->b);
            if (q && q->data) /* its vector of an earlier round: a spare for this walk */
                spare(s, q->data), q->data = NULL;
            if (!evaluate(s, op->a, op->b, NULL, 0, &sum, &error, s->defers[i]))
                return error;
            q = entry(s, op->a, op->b); /* evaluate adds no entries, so none moves */
            q->data = sum.data; /* a spare, not a held piece's: the node is not held */
            q->start = 0, q->count = s->p->n_params;
            if (sum.owned)
                s->live--; /* the piece's now, not the walk's */
            q->held = 1;
        }
        s->lazy_lo = s->lazy_hi = 0;
        return NULL;
    case ALPHA_OP_SEND:
        if (!(q = held(s, op->a, op->b)) || !within(e, q->start, q->count))
            return "sends elements of a piece the role does not hold";
        if (s->deferred && op->a == 0 && op->b == s->p->leaves)
            return "sends the round's gradient, which it leaves to the learner";
        if (!s->dry)
            net_send_piece(s->net, op->link, op->a, op->b, e.start, e.count, q->data);
        return NULL;
    case ALPHA_OP_RECV:
        if (held(s, op->a, op->b))
            return "receives a piece the role already holds";
        q = slot(s, op->a, op->b);
        if (!s->dry)
            net_recv_piece(s->net, op->link, op->a, op->b, e.start, e.count, q->data);
        q->held = 1, q->start = e.start, q->count = e.count;
        return NULL;
    case ALPHA_OP_APPLY:
        if (!(q = held(s, 0, s->p->leaves)) || !within(e, q->start, q->count))
            return "applies the round's gradient, but the role does not hold those elements of "
                   "piece [0, leaves)";
        if (&alpha_clip_hook && (error = alpha_clip_hook(s, op)))
            return error;
        if (!s->dry && s->deferred)
            alpha_apply_pair(s->staged, s->state_staged, s->defer_left, s->defer_right, s->round,
                             e.start, e.count);
        else if (!s->dry)
            alpha_apply(s->staged, s->state_staged, q->data, s->round, e.start, e.count);
        stage_touch(s, e);
        s->applied = 1;
        return NULL;
    case ALPHA_OP_SEND_PARAMS:
        if (!s->dry && &alpha_device_fetch_params)
            alpha_device_fetch_params(s->staged, e.start, e.count);
        if (!s->dry)
            net_send_params(s->net, op->link, e.start, e.count, s->staged);
        return NULL;
    case ALPHA_OP_RECV_PARAMS:
        if (!s->dry)
            net_recv_params(s->net, op->link, e.start, e.count, s->staged);
        if (!s->dry && &alpha_device_params_written)
            alpha_device_params_written(e.start, e.count);
        stage_touch(s, e);
        return NULL;
    case ALPHA_OP_NORM_SEND:
    case ALPHA_OP_NORM_RECV:
        return &alpha_clip_hook ? alpha_clip_hook(s, op) : "moves gradient norms, but the "
                                                           "kernels do not clip";
    default:
        return checkpoint_op(s, op);
    }
}

const char *schedule_round(struct schedule *s, uint32_t *failed)
{
    s->n_adds = 0;
    s->live = 0;
    s->lazy_lo = s->lazy_hi = 0;
    s->n_touched = 0;
    s->applied = 0;
    s->deferred = 0;
    s->n_norms = s->n_out = 0;
    for (uint32_t i = 0; i < s->r->n_ops; i++) {
        const char *error = run_op(s, i);
        if (error) {
            *failed = i;
            return error;
        }
    }
    if (!s->dry) {
        if (s->net)
            net_flush(s->net);
        stage_commit(s);
        s->loss = round_loss(s);
    }
    for (uint32_t i = 0; i < s->n_pieces; i++)
        s->pieces[i].held = 0;
    return NULL;
}

float schedule_train(struct schedule *s, const struct dataset *d, struct net *net,
                     uint32_t step_every)
{
    const struct alpha_program *p = s->p;
    const struct alpha_role *r = s->r;
    s->d = d, s->net = net, s->step_every = step_every;
    size_t rows = (size_t)p->leaf_size * (s->batch_leaves ? s->batch_leaves : 1);
    s->x = checked_calloc(rows * p->features, sizeof(float), "a leaf's inputs");
    if (d->y_class)
        s->y_class = checked_calloc(rows * d->targets, sizeof(int32_t), "a leaf's labels");
    if (d->y_reg)
        s->y_reg = checked_calloc(rows * p->outputs, sizeof(float), "a leaf's targets");
    uint32_t failed;
    uint64_t frames = net->frames, bytes = net->bytes;
    for (uint32_t t = s->first_round; t < p->steps; t++) {
        s->round = net->round = t;
        s->checkpointing = r->checkpoint_every &&
                           ((t + 1) % r->checkpoint_every == 0 || t + 1 == p->steps);
        refusal_context(r->name, t + 1);
        schedule_round(s, &failed); /* checked dry: a real round cannot fail, only refuse */
        /* every step_every-th round and the last (0: none); frames and bytes since the last
         * one reported, so that their sum is the run's traffic however many are reported */
        if (s->step_every && ((t + 1) % s->step_every == 0 || t + 1 == p->steps)) {
            event_step(t + 1, s->loss, r->name, s->adds, s->n_adds, net->frames - frames,
                       net->bytes - bytes);
            frames = net->frames, bytes = net->bytes;
        }
        /* the held-out metric of the round's parameters: the forward kernels and buffers are
         * not the step's, so training goes on with the same bits */
        if (s->eval_every && (t + 1) % s->eval_every == 0)
            event_evaluated(p, t + 1, evaluate_holdout(p, d, s->params));
    }
    refusal_context(r->name, 0);
    if (&alpha_device_fetch_params) /* a GPU role: the final parameters, from its device */
        alpha_device_fetch_params(s->params, 0, p->n_params);
    return s->loss;
}
