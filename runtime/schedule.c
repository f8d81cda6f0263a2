/* The schedule interpreter (schedule.h). One function runs a round both ways: dry, to check the
 * schedule and size its tables (schedule_check.c), and for real. The runtime's only arithmetic
 * on training values is here: the tree's float32 additions and the round loss divided by the
 * batch. */
#include "schedule.h"

#include <stdlib.h>

#include "batch.h"
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

/* The slot of piece [lo, hi), with its storage in a real run (not yet marked held). */
static struct piece *slot(struct schedule *s, uint32_t lo, uint32_t hi)
{
    struct piece *q = find(s, lo, hi);
    if (!q) {
        s->pieces = checked_grow(s->pieces, s->n_pieces, &s->cap_pieces, sizeof *s->pieces, 8,
                                 "the piece table");
        q = &s->pieces[s->n_pieces++];
        *q = (struct piece){lo, hi, 0, 0, 0, NULL};
    }
    if (!s->dry && !q->data)
        q->data = checked_calloc(s->p->n_params + 1, sizeof(float), "a piece");
    q->start = 0, q->count = s->p->n_params;
    return q;
}

/* Leaf l of the current round into out: its gradient, then its loss. The kernel writes every
 * one of the n_params floats (alpha_program.h), so out is not cleared first. */
uint32_t alpha_leaf_round, alpha_leaf_index;

static void compute_leaf(struct schedule *s, uint32_t l, float *out)
{
    const struct alpha_program *p = s->p;
    batch_gather(p, s->d, p->rows - p->holdout, s->round, l, s->x, s->y_class, s->y_reg);
    alpha_leaf_round = s->round, alpha_leaf_index = l; /* dropout's mask: (t, l) of this leaf */
    out[p->n_params] = alpha_leaf_grad(s->params, s->x, s->y_class, s->y_reg, out);
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

/* out[i] = ((base[i] + rights[n-1][i]) + ...) + rights[0][i]: a chain of additions in one
 * pass, the first operand added first (n = 1: one addition). out may be base itself, which a
 * compiler's overlap check would otherwise send to one float at a time. */
static void add_chain(float *out, const float *base, const float *const *rights, uint32_t n,
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

/* out[i] = left[i] + (a[i] + b[i]): a right subtree's own addition in the same pass as its
 * parent's, its sum never stored. */
static void add_right_pair(float *out, const float *left, const float *a, const float *b,
                           uint64_t len)
{
    uint64_t i = 0;
    floats8 v;
#pragma clang loop unroll(disable)
    for (; i + 8 <= len; i += 8) {
        v = load8(left + i) + (load8(a + i) + load8(b + i));
        __builtin_memcpy(out + i, &v, sizeof v);
    }
#pragma clang loop vectorize(disable) unroll(disable)
    for (; i < len; i++)
        out[i] = left[i] + (a[i] + b[i]);
}

/* The tree walk's bookkeeping is compiled for size (the executable has a size budget); the
 * time is spent in the kernels and in the additions above. */
#define WALK __attribute__((minsize))

/* Addition [lo, mid) + [mid, hi) is performed at `depth` (it uses scratch[depth]). */
WALK static void record(struct schedule *s, uint32_t lo, uint32_t mid, uint32_t hi, uint32_t depth)
{
    if (s->n_adds < s->cap_adds)
        s->adds[s->n_adds] = (struct addition){lo, mid, hi};
    s->n_adds++;
    if (depth + 1 > s->depth && s->dry)
        s->depth = depth + 1;
}

WALK static const float *evaluate(struct schedule *s, uint32_t lo, uint32_t hi, float *out,
                                  uint32_t depth, const char **error);

enum { SPINE = 8 }; /* the longest chain added in one pass */

/* Node [lo, hi) (not held, not a leaf) down its left edge: while a node's right child is a
 * piece held whole (received from a child role, say), the node is its left child plus that
 * piece. A chain of two or more such links is added in one pass once its bottom node is in
 * out, the bottom link first, as the recursion would: a combining role with k children reads
 * and writes its result once, not k times. Returns 0 when the chain is shorter (nothing done);
 * else 1, with *result as evaluate's. */
WALK static int spine(struct schedule *s, uint32_t lo, uint32_t hi, float *out, uint32_t depth,
                 const char **error, const float **result)
{
    const float *rights[SPINE];
    uint32_t mids[SPINE], his[SPINE], n = 0, h = hi;
    while (n < SPINE && h - lo > 1 && (h == hi || !held(s, lo, h))) {
        uint32_t m = lo + tree_split(h - lo);
        struct piece *r = held(s, m, h);
        if (!r || r->count != s->p->n_params)
            break;
        rights[n] = r->data, mids[n] = m, his[n] = h, n++;
        h = m;
    }
    if (n < 2)
        return 0;
    const float *base = evaluate(s, lo, h, out, depth, error);
    if (base && !s->dry)
        add_chain(out, base, rights, n, s->p->n_params + 1); /* the loss float too */
    for (uint32_t j = n; base && j-- > 0;)
        record(s, lo, mids[j], his[j], depth);
    *result = base ? out : NULL;
    return 1;
}

/* Node [lo, hi) by the canonical tree: a held piece as it is, a leaf of the running COMBINE's
 * own COMPUTE computed into out, otherwise left + right into out, the right subtree in
 * scratch[depth]. When the right subtree is itself an addition (not held), its two operands go
 * to scratch[depth] and scratch[depth + 1] and both additions are made in one pass: the same
 * additions in the same order, one pass over memory fewer; held pieces down the left edge are
 * added in one pass too (spine). NULL (dry run only) when a leaf is missing. */
WALK static const float *evaluate(struct schedule *s, uint32_t lo, uint32_t hi, float *out,
                                  uint32_t depth, const char **error)
{
    struct piece *q = held(s, lo, hi);
    if (q && q->count != s->p->n_params) {
        *error = "combines a piece the role holds only in part";
        return NULL;
    }
    if (q)
        return s->dry ? out : q->data;
    if (hi - lo == 1) {
        if (lo < s->lazy_lo || lo >= s->lazy_hi) {
            *error = "needs a leaf piece this role neither computes nor receives first";
            return NULL;
        }
        if (!s->dry)
            compute_leaf(s, lo, out);
        return out;
    }
    const float *chained;
    if (spine(s, lo, hi, out, depth, error, &chained))
        return chained;
    uint32_t mid = lo + tree_split(hi - lo);
    const float *left = evaluate(s, lo, mid, out, depth, error), *a = NULL, *b = NULL;
    if (!left)
        return NULL;
    if (hi - mid > 1 && !held(s, mid, hi)) {
        uint32_t split = mid + tree_split(hi - mid);
        a = evaluate(s, mid, split, s->dry ? out : s->scratch[depth], depth + 1, error);
        b = a ? evaluate(s, split, hi, s->dry ? out : s->scratch[depth + 1], depth + 2, error)
              : NULL;
        if (!b)
            return NULL;
        record(s, mid, split, hi, depth + 1);
    } else if (!(a = evaluate(s, mid, hi, s->dry ? out : s->scratch[depth], depth + 1, error))) {
        return NULL;
    }
    if (!s->dry && b)
        add_right_pair(out, left, a, b, s->p->n_params + 1); /* the loss float too */
    else if (!s->dry)
        add_chain(out, left, &a, 1, s->p->n_params + 1);
    record(s, lo, mid, hi, depth);
    return out;
}

/* The round's loss from piece [0, leaves), when the role holds it. */
static float round_loss(struct schedule *s)
{
    struct piece *total = held(s, 0, s->p->leaves);
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
        if (!s->dry)
            capture_write(&s->capture, captured, op, s->staged, s->state_staged,
                          s->state_start, s->state_count);
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
                compute_leaf(s, l, q->data);
            q->held = 1;
        }
        return NULL;
    case ALPHA_OP_COMBINE:
        if (!held(s, op->a, op->b)) {
            q = slot(s, op->a, op->b);
            float dummy = 0;
            if (!evaluate(s, op->a, op->b, s->dry ? &dummy : q->data, 0, &error))
                return error;
            q->held = 1; /* evaluate adds no slots, so q is still valid */
        }
        s->lazy_lo = s->lazy_hi = 0;
        return NULL;
    case ALPHA_OP_SEND:
        if (!(q = held(s, op->a, op->b)) || !within(e, q->start, q->count))
            return "sends elements of a piece the role does not hold";
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
        if (!s->dry)
            alpha_apply(s->staged, s->state_staged, q->data, s->round, e.start, e.count);
        stage_touch(s, e);
        s->applied = 1;
        return NULL;
    case ALPHA_OP_SEND_PARAMS:
        if (!s->dry)
            net_send_params(s->net, op->link, e.start, e.count, s->staged);
        return NULL;
    case ALPHA_OP_RECV_PARAMS:
        if (!s->dry)
            net_recv_params(s->net, op->link, e.start, e.count, s->staged);
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
    s->lazy_lo = s->lazy_hi = 0;
    s->n_touched = 0;
    s->applied = 0;
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

float schedule_train(struct schedule *s, const struct dataset *d, struct net *net, int quiet)
{
    const struct alpha_program *p = s->p;
    const struct alpha_role *r = s->r;
    s->d = d, s->net = net, s->quiet = quiet;
    s->x = checked_calloc((size_t)p->leaf_size * p->features, sizeof(float), "a leaf's inputs");
    if (d->y_class)
        s->y_class = checked_calloc((size_t)p->leaf_size * d->targets, sizeof(int32_t),
                                    "a leaf's labels");
    if (d->y_reg)
        s->y_reg = checked_calloc((size_t)p->leaf_size * p->outputs, sizeof(float),
                                  "a leaf's targets");
    uint32_t failed;
    uint64_t frames = net->frames, bytes = net->bytes;
    for (uint32_t t = s->first_round; t < p->steps; t++) {
        s->round = net->round = t;
        s->checkpointing = r->checkpoint_every &&
                           ((t + 1) % r->checkpoint_every == 0 || t + 1 == p->steps);
        refusal_context(r->name, t + 1);
        schedule_round(s, &failed); /* checked dry: a real round cannot fail, only refuse */
        if (!s->quiet)
            event_step(t + 1, s->loss, r->name, s->adds, s->n_adds, net->frames - frames,
                       net->bytes - bytes);
        frames = net->frames, bytes = net->bytes;
    }
    refusal_context(r->name, 0);
    return s->loss;
}
