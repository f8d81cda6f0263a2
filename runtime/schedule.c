/* The schedule interpreter (schedule.h). One function runs a round both ways: dry, to check the
 * schedule and size its tables, and for real. The runtime's only arithmetic on training values
 * is here: the tree's float32 additions and the round loss divided by the batch. */
#include "schedule.h"

#include <stdlib.h>
#include <string.h>

#include "batch.h"
#include "refusal.h"
#include "tree.h"

static const char *const OP_NAMES[] = {"?", "COMPUTE", "COMBINE", "SEND", "RECV", "APPLY"};

static struct piece *find(struct schedule *s, uint32_t lo, uint32_t hi)
{
    for (uint32_t i = 0; i < s->n_pieces; i++)
        if (s->pieces[i].lo == lo && s->pieces[i].hi == hi)
            return &s->pieces[i];
    return NULL;
}

static int held(struct schedule *s, uint32_t lo, uint32_t hi)
{
    struct piece *q = find(s, lo, hi);
    return q && q->held;
}

/* The slot of piece [lo, hi), with its storage in a real run (not yet marked held). */
static struct piece *slot(struct schedule *s, uint32_t lo, uint32_t hi)
{
    struct piece *q = find(s, lo, hi);
    if (!q) {
        if (s->n_pieces == s->cap_pieces) {
            s->cap_pieces = s->cap_pieces ? 2 * s->cap_pieces : 8;
            struct piece *grown = realloc(s->pieces, s->cap_pieces * sizeof *grown);
            if (!grown)
                refuse(REFUSAL_OUT_OF_MEMORY, "cannot grow the piece table");
            s->pieces = grown;
        }
        q = &s->pieces[s->n_pieces++];
        *q = (struct piece){lo, hi, 0, NULL};
    }
    if (!s->dry && !q->data)
        q->data = checked_calloc(s->p->n_params + 1, sizeof(float), "a piece");
    return q;
}

/* Leaf l of the current round into out: its gradient, then its loss. */
static void compute_leaf(struct schedule *s, uint32_t l, float *out)
{
    const struct alpha_program *p = s->p;
    batch_gather(p, s->d, p->rows - p->holdout, s->round, l, s->x, s->y_class, s->y_reg);
    memset(out, 0, p->n_params * sizeof(float));
    out[p->n_params] = alpha_leaf_grad(s->params, s->x, s->y_class, s->y_reg, out);
}

/* Node [lo, hi) by the canonical tree: a held piece as it is, a leaf of the running COMBINE's
 * own COMPUTE computed into out, otherwise left + right into out, the right subtree in
 * scratch[depth]. NULL (dry run only) when a leaf is missing. */
static const float *evaluate(struct schedule *s, uint32_t lo, uint32_t hi, float *out,
                             uint32_t depth, const char **error)
{
    struct piece *q = find(s, lo, hi);
    if (q && q->held)
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
    uint32_t mid = lo + tree_split(hi - lo);
    const float *left = evaluate(s, lo, mid, out, depth, error);
    const float *right = left ? evaluate(s, mid, hi, s->dry ? out : s->scratch[depth],
                                         depth + 1, error) : NULL;
    if (!right)
        return NULL;
    if (!s->dry)
        for (uint64_t i = 0; i <= s->p->n_params; i++) /* the loss float too */
            out[i] = left[i] + right[i];
    if (s->n_adds < s->cap_adds)
        s->adds[s->n_adds] = (struct addition){lo, mid, hi};
    s->n_adds++;
    if (depth + 1 > s->depth && s->dry)
        s->depth = depth + 1;
    return out;
}

static void apply(struct schedule *s, const float *gradient)
{
    const struct alpha_program *p = s->p;
    s->loss = gradient[p->n_params] / (float)p->batch;
    alpha_apply(s->params, s->state, gradient, s->round, 0, s->p->n_params);
    if (!s->quiet)
        event_step(s->round + 1, s->loss, s->r->name, s->adds, s->n_adds);
}

/* Runs op i of the current round; returns why it cannot run (dry runs only), or NULL. */
static const char *run_op(struct schedule *s, uint32_t i)
{
    const struct alpha_op *op = &s->r->ops[i];
    const char *error = NULL;
    switch (op->kind) {
    case ALPHA_OP_COMPUTE:
        if (s->fused[i]) {
            s->lazy_lo = op->a, s->lazy_hi = op->b;
            return NULL;
        }
        for (uint32_t l = op->a; l < op->b; l++) {
            if (held(s, l, l + 1))
                return "computes a leaf piece the role already holds";
            struct piece *q = slot(s, l, l + 1);
            if (!s->dry)
                compute_leaf(s, l, q->data);
            q->held = 1;
        }
        return NULL;
    case ALPHA_OP_COMBINE:
        if (!held(s, op->a, op->b)) {
            struct piece *q = slot(s, op->a, op->b);
            float dummy = 0;
            if (!evaluate(s, op->a, op->b, s->dry ? &dummy : q->data, 0, &error))
                return error;
            q->held = 1; /* evaluate adds no slots, so q is still valid */
        }
        s->lazy_lo = s->lazy_hi = 0;
        return NULL;
    case ALPHA_OP_SEND:
        if (!held(s, op->a, op->b))
            return "sends a piece the role does not hold";
        if (!s->dry)
            net_send_piece(s->net, op->link, op->a, op->b, find(s, op->a, op->b)->data);
        return NULL;
    case ALPHA_OP_RECV:
        if (held(s, op->a, op->b))
            return "receives a piece the role already holds";
        struct piece *q = slot(s, op->a, op->b);
        if (!s->dry)
            net_recv_piece(s->net, op->link, op->a, op->b, q->data);
        q->held = 1;
        return NULL;
    default: /* ALPHA_OP_APPLY */
        if (!held(s, 0, s->p->leaves))
            return "applies the round's gradient, but the role does not hold piece [0, leaves)";
        if (!s->dry)
            apply(s, find(s, 0, s->p->leaves)->data);
        return NULL;
    }
}

/* One round: every op in order, then the pieces are released (their storage is kept). */
static const char *run_round(struct schedule *s, uint32_t *failed)
{
    s->n_adds = 0;
    s->lazy_lo = s->lazy_hi = 0;
    for (uint32_t i = 0; i < s->r->n_ops; i++) {
        const char *error = run_op(s, i);
        if (error) {
            *failed = i;
            return error;
        }
    }
    if (!s->dry && s->net)
        net_flush(s->net);
    for (uint32_t i = 0; i < s->n_pieces; i++)
        s->pieces[i].held = 0;
    return NULL;
}

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
    refuse(REFUSAL_PROGRAM_INVALID, "ALPHA_ROLE %s, op %u (%s %u %u): %s", r->name,
           (unsigned)i + 1, OP_NAMES[op->kind <= ALPHA_OP_APPLY ? op->kind : 0],
           (unsigned)op->a, (unsigned)op->b, why);
}

static void check_ops(const struct alpha_program *p, const struct alpha_role *r)
{
    uint32_t applies = 0;
    for (uint32_t i = 0; i < r->n_ops; i++) {
        const struct alpha_op *op = &r->ops[i];
        if (op->kind < ALPHA_OP_COMPUTE || op->kind > ALPHA_OP_APPLY)
            invalid(r, i, "unknown op kind");
        if (op->kind != ALPHA_OP_APPLY && !(op->a < op->b && op->b <= p->leaves))
            invalid(r, i, "the range is empty or outside [0, leaves)");
        if ((op->kind == ALPHA_OP_SEND || op->kind == ALPHA_OP_RECV) && op->link >= r->n_links)
            invalid(r, i, "no such link");
        if (op->kind >= ALPHA_OP_COMBINE && op->kind <= ALPHA_OP_RECV &&
            !is_node(p->leaves, op->a, op->b))
            invalid(r, i, "not a node of the canonical tree");
        if (applies && op->kind != ALPHA_OP_SEND)
            invalid(r, i, "only SEND may follow APPLY: a round commits after all it receives");
        applies += op->kind == ALPHA_OP_APPLY;
    }
    /* A role that holds no learner state (a star's hub) combines and forwards, and applies
     * nothing; every other role applies exactly once. */
    if (applies > 1)
        refuse(REFUSAL_PROGRAM_INVALID, "ALPHA_ROLE %s has %u APPLY ops; it needs one at most",
               r->name, (unsigned)applies);
}

static int applies(const struct alpha_role *r)
{
    for (uint32_t i = 0; i < r->n_ops; i++)
        if (r->ops[i].kind == ALPHA_OP_APPLY)
            return 1;
    return 0;
}

void schedule_check(struct schedule *s, const struct alpha_program *p,
                    const struct alpha_role *r)
{
    memset(s, 0, sizeof *s);
    s->p = p, s->r = r, s->dry = 1;
    if (r->n_roles == 0 || r->index >= r->n_roles || r->n_ops == 0 || !r->ops)
        refuse(REFUSAL_PROGRAM_INVALID, "ALPHA_ROLE %s: role index %u of %u roles, %u ops",
               r->name, (unsigned)r->index, (unsigned)r->n_roles, (unsigned)r->n_ops);
    check_ops(p, r);
    s->fused = checked_calloc(r->n_ops, 1, "the schedule");
    uint32_t failed;
    const char *error = run_round(s, &failed);
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
        if (run_round(s, &failed))
            s->fused[i] = 0;
    }
    s->n_pieces = 0;
    run_round(s, &failed); /* sizes the scratch vectors and the addition list */
    s->cap_adds = s->n_adds;
    s->adds = checked_calloc(s->cap_adds, sizeof *s->adds, "the combine record");
    s->scratch = checked_calloc(s->depth, sizeof(float *), "the combine tree");
    for (uint32_t i = 0; i < s->depth; i++)
        s->scratch[i] = checked_calloc(p->n_params + 1, sizeof(float), "the combine tree");
    s->n_pieces = 0;
    s->dry = 0;
}

float schedule_train(struct schedule *s, const struct dataset *d, float *params,
                     struct net *net, int quiet)
{
    const struct alpha_program *p = s->p;
    s->d = d, s->net = net, s->params = params, s->quiet = quiet;
    s->state = checked_calloc(p->n_state, sizeof(float), "learner state");
    s->x = checked_calloc((size_t)p->leaf_size * p->features, sizeof(float), "a leaf's inputs");
    if (d->y_class)
        s->y_class = checked_calloc(p->leaf_size, sizeof(int32_t), "a leaf's labels");
    if (d->y_reg)
        s->y_reg = checked_calloc((size_t)p->leaf_size * p->outputs, sizeof(float),
                                  "a leaf's targets");
    uint32_t failed;
    for (uint32_t t = 0; t < p->steps; t++) {
        s->round = net->round = t;
        refusal_context(s->r->name, t + 1);
        run_round(s, &failed); /* checked dry: a real round cannot fail, only refuse */
        if (!applies(s->r) && !s->quiet) {
            struct piece *total = find(s, 0, p->leaves);
            s->loss = total && total->data ? total->data[p->n_params] / (float)p->batch : 0.0f;
            event_step(t + 1, s->loss, s->r->name, s->adds, s->n_adds);
        }
    }
    refusal_context(s->r->name, 0);
    return p->steps ? s->loss : 0.0f;
}
