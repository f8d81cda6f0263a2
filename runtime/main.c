/* The executable's entry point: read the command line, check the program, its role's schedule
 * and its data, open the links to the other roles, train, publish the parameters (the role that
 * writes them), report. Every failure is a named refusal (refusal.h); the parameter file is
 * written only after the last round, so a refused run leaves none behind. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alpha_program.h"
#include "data.h"
#include "evaluate.h"
#include "events.h"
#include "params_file.h"
#include "refusal.h"
#include "net.h"
#include "schedule.h"

struct options {
    const char *data_path;     /* NULL: the program's data_path */
    const char *params_out;
    int quiet;
};

static const char USAGE[] =
    "usage: %s [--data PATH] [--params-out PATH] [--quiet] [--help]\n"
    "\n"
    "Runs role %s of system %s; the role that writes parameters writes them (little-endian\n"
    "float32) to PATH.\n"
    "  --data PATH        read the data set from PATH instead of %s\n"
    "  --params-out PATH  where to write the parameters (default: %s.params)\n"
    "  --quiet            no step events\n"
    "Events are JSON lines on stdout; exit 0 done, 2 bad usage, 3 refused.\n";

static struct options parse_options(int argc, char **argv)
{
    const char *self = argc > 0 ? argv[0] : "alpha";
    struct options o = {NULL, NULL, 0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            printf(USAGE, self, ALPHA_ROLE.name, ALPHA_PROGRAM.system,
                   ALPHA_PROGRAM.data_kind == ALPHA_DATA_CSV ? ALPHA_PROGRAM.data_path
                                                             : "the embedded data",
                   self);
            exit(0);
        } else if (strcmp(a, "--quiet") == 0) {
            o.quiet = 1;
        } else if (strcmp(a, "--data") == 0 || strcmp(a, "--params-out") == 0) {
            if (i + 1 >= argc)
                refuse(REFUSAL_USAGE, "%s needs a path", a);
            if (a[2] == 'd')
                o.data_path = argv[++i];
            else
                o.params_out = argv[++i];
        } else {
            refuse(REFUSAL_USAGE, "unknown argument %s (try --help)", a);
        }
    }
    if (o.data_path && ALPHA_PROGRAM.data_kind == ALPHA_DATA_EMBEDDED)
        refuse(REFUSAL_USAGE, "--data given, but the data of system %s is embedded",
               ALPHA_PROGRAM.system);
    if (!o.params_out) {
        size_t size = strlen(self) + sizeof ".params";
        char *path = checked_calloc(size, 1, "a file name");
        snprintf(path, size, "%s.params", self);
        o.params_out = path;
    }
    return o;
}

/* The generated program is trusted, but a contradiction in it would turn into out-of-bounds
 * reads, so it is checked once. */
static void check_program(const struct alpha_program *p)
{
    if (p->leaves == 0 || p->leaf_size == 0 || (uint64_t)p->leaves * p->leaf_size != p->batch)
        refuse(REFUSAL_PROGRAM_INVALID, "batch %u is not leaves %u x leaf_size %u",
               (unsigned)p->batch, (unsigned)p->leaves, (unsigned)p->leaf_size);
    if (p->holdout >= p->rows)
        refuse(REFUSAL_PROGRAM_INVALID, "holdout %u leaves no training rows out of %u",
               (unsigned)p->holdout, (unsigned)p->rows);
    if (p->outputs == 0 || p->features == 0)
        refuse(REFUSAL_PROGRAM_INVALID, "features %u and outputs %u must be positive",
               (unsigned)p->features, (unsigned)p->outputs);
    if (p->label_kind > ALPHA_LABEL_REGRESSION || p->data_kind > ALPHA_DATA_EMBEDDED)
        refuse(REFUSAL_PROGRAM_INVALID, "unknown label kind %u or data kind %u",
               (unsigned)p->label_kind, (unsigned)p->data_kind);
    if (!p->data_sha256 || strlen(p->data_sha256) != 64)
        refuse(REFUSAL_PROGRAM_INVALID, "data_sha256 is not 64 hex digits");
    if (p->data_kind == ALPHA_DATA_EMBEDDED ? !p->embedded_x || !p->embedded_y : !p->data_path)
        refuse(REFUSAL_PROGRAM_INVALID, "the program names no data");
}

int main(int argc, char **argv)
{
    const struct alpha_program *p = &ALPHA_PROGRAM;
    const struct alpha_role *role = &ALPHA_ROLE;
    refusal_context(role->name, 0);
    struct options o = parse_options(argc, argv);
    check_program(p);
    struct schedule s;
    schedule_check(&s, p, role);
    event_start(p);

    struct dataset d;
    data_load(p, o.data_path, &d);

    struct net net;
    net_open(&net, p, role);

    float *params = checked_calloc(p->n_params, sizeof(float), "the parameters");
    alpha_init_params(params);
    float loss = schedule_train(&s, &d, params, &net, o.quiet);

    struct run_report r = {
        .role = role->name,
        .steps = p->steps,
        .final_loss = loss,
        .holdout_rows = p->holdout,
    };
    if (role->writes_params) {
        /* Evaluate before publishing, so that nothing after the file is written can refuse. */
        r.params_file = o.params_out;
        r.holdout_metric = evaluate_holdout(p, &d, params);
        params_write(o.params_out, params, p->n_params, r.params_sha256);
    }
    event_done(p, &r);
    return 0;
}
