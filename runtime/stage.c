/* The learning state of a role (schedule.h): committed parameters and learner state, and the
 * running round's staged copies. APPLY and RECV_PARAMS write the staged copies and record the
 * parameter ranges they updated; once every op of the round has run, those ranges and the
 * learner state are committed.
 *
 * A refusal ends the process and writes nothing, so the only reader of the committed copies
 * during a round is the round's own leaf computation. The staged copies are therefore the
 * committed ones themselves (updated in place, nothing copied per round) unless an op that
 * writes parameters comes before one that computes leaves: then the leaves must still see the
 * last round's parameters, and the parameters alone get a separate staged copy. The learner
 * state is read by APPLY alone, and always updated in place. */
#include <string.h>

#include "refusal.h"
#include "schedule.h"

/* Whether a RECV_PARAMS (APPLY cannot: schedule_check) comes before a leaf computation. */
static int writes_before_compute(const struct alpha_role *r)
{
    int written = 0;
    for (uint32_t i = 0; i < r->n_ops; i++) {
        uint32_t k = r->ops[i].kind;
        if (written && (k == ALPHA_OP_COMPUTE || k == ALPHA_OP_COMBINE))
            return 1;
        written |= k == ALPHA_OP_RECV_PARAMS || k == ALPHA_OP_APPLY;
    }
    return 0;
}

void schedule_prepare(struct schedule *s, const char *checkpoint_dir)
{
    const struct alpha_program *p = s->p;
    s->params = checked_calloc(p->n_params, sizeof(float), "the parameters");
    s->staged = writes_before_compute(s->r)
                    ? checked_calloc(p->n_params, sizeof(float), "the parameters")
                    : s->params;
    s->state_floats = s->applies ? p->state_slots * s->state_count + p->state_scalars : 0;
    /* A role holding all the state holds n_state floats, whatever the slots say. */
    if (s->applies && s->state_count == p->n_params && p->n_state > s->state_floats)
        s->state_floats = p->n_state;
    s->state = s->state_staged = checked_calloc(s->state_floats, sizeof(float), "learner state");
    alpha_init_params(s->params);
    schedule_restage(s);
    capture_init(&s->capture, p, s->r, checkpoint_dir);
}

void schedule_restage(struct schedule *s)
{
    if (s->staged != s->params)
        memcpy(s->staged, s->params, s->p->n_params * sizeof(float));
}

/* Records that the round updated parameters [start, start + count) in staged. */
void stage_touch(struct schedule *s, struct range e)
{
    s->touched[s->n_touched++] = e;
}

/* Whether the round has updated every parameter of e. */
int stage_updated(const struct schedule *s, struct range e)
{
    uint64_t at = e.start, end = e.start + e.count;
    for (uint32_t pass = 0; at < end && pass < s->n_touched; pass++)
        for (uint32_t i = 0; i < s->n_touched; i++)
            if (s->touched[i].start <= at && at < s->touched[i].start + s->touched[i].count)
                at = s->touched[i].start + s->touched[i].count;
    return at >= end;
}

/* The round has run whole: its updates become the committed state (a copy only where the
 * parameters have a separate staged copy). */
void stage_commit(struct schedule *s)
{
    for (uint32_t i = 0; i < s->n_touched && s->staged != s->params; i++)
        memcpy(s->params + s->touched[i].start, s->staged + s->touched[i].start,
               s->touched[i].count * sizeof(float));
}
