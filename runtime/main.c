/* The executable's entry point: read the command line, check the program, its role's schedule
 * and its data, resume from a checkpoint when asked, open the links to the other roles, train,
 * publish the parameters (the role that writes them), report. Every failure is a named refusal
 * (refusal.h); the parameter file is written only after the last round, so a refused run leaves
 * none behind. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alpha_program.h"
#include "cpu_level.h"
#include "data.h"
#include "evaluate.h"
#include "events.h"
#include "files.h"
#include "hmac.h"
#include "lifeline.h"
#include "params_file.h"
#include "pool.h"
#include "predict.h"
#include "refusal.h"
#include "net.h"
#include "resume.h"
#include "retention.h"
#include "schedule.h"
#include "secret.h"
#include "sha256.h"

/* Defined only by a GPU role's bridge (gpu_role.c); null in every other executable. */
extern int alpha_device_option(const char *flag, const char *value) __attribute__((weak));
extern const char *alpha_device_usage(void) __attribute__((weak));
extern void alpha_device_start(void) __attribute__((weak));

struct options {
    const char *data_path;     /* NULL: the program's data_path */
    const char *params_out;
    const char *resume;        /* a checkpoint or capture folder, or NULL */
    const char *checkpoint_dir;
    const char *secret_file;   /* --secret-file: where the launch secret is (secret.h) */
    uint32_t keep;             /* --checkpoint-keep: published captures kept; 0: all */
    uint32_t threads;          /* --threads: 0 for the build's choice */
    uint32_t step_every;       /* --step-every N: a step event every N rounds; 0: none */
    uint32_t eval_every;       /* --eval-every N: the held-out metric every N rounds; 0: none */
    int evaluate_only;
    const char *predict;       /* --predict INPUT: new inputs to run the forward pass on */
    const char *predict_out;   /* --predict-out OUT: where their outputs go */
    const char *params_in;     /* --params PATH: the parameters to predict with */
};

static const char USAGE[] =
    "usage: %s [--data PATH] [--params-out PATH] [--checkpoint-dir PATH]\n"
    "       [--checkpoint-keep N] [--resume PATH | --fresh] [--evaluate-only] [--quiet]\n"
    "       [--step-every N]\n"
    "       [--predict INPUT --predict-out OUT (--params PATH | --resume PATH)]\n"
    "       [--secret-file PATH] [--threads N] [--describe] [--help]\n"
    "\n"
    "Runs role %s of system %s; the role that writes parameters writes them (little-endian\n"
    "float32) to PATH.\n"
    "  --data PATH            read the data set from PATH instead of %s\n"
    "  --params-out PATH      where to write the parameters (default: %s.params)\n"
    "  --checkpoint-dir PATH  where captures go (default: %s)\n"
    "  --checkpoint-keep N    the root keeps the N newest published captures, removing\n"
    "                         older ones as it publishes (default: %s)\n"
    "  --resume PATH          continue from the newest published capture in PATH, or from\n"
    "                         the capture folder PATH (default: %s)\n"
    "  --fresh                start from round 0 even when the build names a resume path\n"
    "  --evaluate-only        with --resume: evaluate the capture's parameters, train nothing\n"
    "  --quiet                no step events\n"
    "  --step-every N         a step event every N rounds and for the last (default 1)\n"
    "  --eval-every N         the held-out metric every N rounds (an `evaluated` event), for\n"
    "                         a single-process run; the training's bits are the same\n"
    "  --secret-file PATH     the launch secret (32 bytes, mode 0600) for a role with links;\n"
    "                         else the descriptor in ALPHA_SECRET_FD, else the build's file\n"
    "  --threads N            threads for the matrix products (default: %s); any count\n"
    "                         gives the same bits\n"
    "  --describe             print the role's compiled-in addresses as JSON and exit\n"
    "  --predict INPUT        run the forward pass on new inputs (CSV rows of features, or a\n"
    "                         float32 .npy) with the parameters of --params PATH (a .params\n"
    "                         file) or --resume PATH (a capture); write every row's outputs to\n"
    "                         --predict-out OUT (.npy, else CSV); train nothing\n"
    "Events are JSON lines on stdout; exit 0 done, 2 bad usage, 3 refused, 4 stopped because\n"
    "the launcher that started it (ALPHA_LIFELINE_FD) ended.\n";

/* s + suffix in a new string. */
static const char *joined(const char *s, const char *suffix)
{
    size_t size = strlen(s) + strlen(suffix) + 1;
    char *out = checked_calloc(size, 1, "a file name");
    snprintf(out, size, "%s%s", s, suffix);
    return out;
}

/* The value of a count option (`--checkpoint-keep 5`): 1 to 999999999, else refused. */
static uint32_t count_option(const char *flag, const char *n, const char *of)
{
    unsigned long count = strspn(n, "0123456789") == strlen(n) && strlen(n) <= 9
                              ? strtoul(n, NULL, 10) : 0;
    if (count == 0)
        refuse(REFUSAL_USAGE, "%s needs a count of %s from 1 to 999999999, not '%s'", flag, of,
               n);
    return (uint32_t)count;
}

static struct options parse_options(int argc, char **argv)
{
    const struct alpha_role *role = alpha_role();
    const char *self = argc > 0 ? argv[0] : "alpha";
    const char *dir = role->checkpoint_dir && *role->checkpoint_dir
                          ? role->checkpoint_dir : joined(self, ".checkpoints");
    const char *resume = role->resume && *role->resume ? role->resume : NULL;
    char keep_text[32] = "keep every capture";
    if (role->checkpoint_keep)
        snprintf(keep_text, sizeof keep_text, "%u", (unsigned)role->checkpoint_keep);
    char threads_text[48] = "the cores this process may use";
    if (role->threads)
        snprintf(threads_text, sizeof threads_text, "%u", (unsigned)role->threads);
    struct options o = {NULL, NULL, resume, dir, NULL, role->checkpoint_keep,
                        role->threads, 1, 0, 0, NULL, NULL, NULL};
    static const char *const valued[] = {"--data", "--params-out", "--resume",
                                         "--checkpoint-dir", "--secret-file", "--predict",
                                         "--predict-out", "--params"};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int v = 0;
        while (v < 8 && strcmp(a, valued[v]) != 0)
            v++;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            printf(USAGE, self, role->name, ALPHA_PROGRAM.system,
                   ALPHA_PROGRAM.data_kind == ALPHA_DATA_CSV ? ALPHA_PROGRAM.data_path
                                                             : "the embedded data",
                   self, dir, keep_text, resume ? resume : "a fresh start", threads_text);
            if (alpha_device_usage)
                fputs(alpha_device_usage(), stdout);
            exit(0);
        } else if (strcmp(a, "--quiet") == 0) {
            o.step_every = 0;
        } else if (strcmp(a, "--step-every") == 0) {
            o.step_every = count_option(a, i + 1 < argc ? argv[++i] : "", "rounds");
        } else if (strcmp(a, "--eval-every") == 0) {
            o.eval_every = count_option(a, i + 1 < argc ? argv[++i] : "", "rounds");
        } else if (strcmp(a, "--describe") == 0) {
            net_describe(role);
            exit(0);
        } else if (strcmp(a, "--evaluate-only") == 0) {
            o.evaluate_only = 1;
        } else if (strcmp(a, "--fresh") == 0) {
            o.resume = NULL;
        } else if (strcmp(a, "--checkpoint-keep") == 0) {
            o.keep = count_option(a, i + 1 < argc ? argv[++i] : "", "captures");
        } else if (strcmp(a, "--threads") == 0) {
            const char *n = i + 1 < argc ? argv[++i] : "";
            unsigned long threads = strspn(n, "0123456789") == strlen(n) && strlen(n) <= 3
                                        ? strtoul(n, NULL, 10) : 0;
            if (threads == 0 || threads > 256)
                refuse(REFUSAL_USAGE, "--threads needs a count from 1 to 256, not '%s'", n);
            o.threads = (uint32_t)threads;
        } else if (v < 8) {
            if (i + 1 >= argc)
                refuse(REFUSAL_USAGE, "%s needs a path", a);
            const char **slot[] = {&o.data_path, &o.params_out, &o.resume, &o.checkpoint_dir,
                                   &o.secret_file, &o.predict, &o.predict_out, &o.params_in};
            *slot[v] = argv[++i];
        } else if (alpha_device_option && alpha_device_option(a, i + 1 < argc ? argv[i + 1] : 0)) {
            i++;
        } else {
            refuse(REFUSAL_USAGE, "unknown argument %s (try --help)", a);
        }
    }
    if (o.data_path && ALPHA_PROGRAM.data_kind == ALPHA_DATA_EMBEDDED)
        refuse(REFUSAL_USAGE, "--data given, but the data of system %s is embedded",
               ALPHA_PROGRAM.system);
    if ((o.predict != NULL) != (o.predict_out != NULL))
        refuse(REFUSAL_USAGE, "--predict INPUT and --predict-out OUT go together");
    if (o.params_in && !o.predict)
        refuse(REFUSAL_USAGE, "--params PATH gives the parameters of --predict");
    if (o.predict && o.params_in && o.resume && resume != o.resume)
        refuse(REFUSAL_USAGE, "--predict takes --params PATH or --resume PATH, not both");
    if (o.predict && o.params_in)
        o.resume = NULL; /* the build's own resume path is not asked for */
    if (o.predict && !o.params_in && !o.resume)
        refuse(REFUSAL_USAGE, "--predict needs --params PATH or --resume PATH");
    if (o.eval_every && role->n_links)
        refuse(REFUSAL_USAGE, "--eval-every evaluates a single-process run: role %s of a plan "
               "holds its parameters whole only at the end", role->name);
    if (o.eval_every && !ALPHA_PROGRAM.holdout)
        refuse(REFUSAL_USAGE, "--eval-every needs held-out rows, and system %s holds none out",
               ALPHA_PROGRAM.system);
    if (o.evaluate_only && !o.resume)
        refuse(REFUSAL_USAGE, "--evaluate-only needs --resume PATH");
    if (!o.params_out)
        o.params_out = joined(self, ".params");
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
    uint64_t covered = 0;
    for (uint32_t i = 0; i < p->n_tensors; i++) {
        if (p->tensors[i].offset != covered || p->tensors[i].count > p->n_params - covered)
            refuse(REFUSAL_PROGRAM_INVALID, "tensor %s is not next in the flat parameters",
                   p->tensors[i].name);
        covered += p->tensors[i].count;
    }
    if (covered != p->n_params || !p->learner)
        refuse(REFUSAL_PROGRAM_INVALID, "the tensors do not add up to %llu parameters, or "
               "the program names no learner", (unsigned long long)p->n_params);
}

static void event_resumed(const struct resumed *r, double seconds)
{
    printf("{\"event\":\"resumed\",\"role\":");
    json_string(stdout, alpha_role()->name);
    printf(",\"round\":%u,\"capture\":", (unsigned)r->round);
    json_string(stdout, r->capture);
    printf(",\"files\":%u,\"bytes\":%llu,\"read_ms\":%.3f}\n", (unsigned)r->files,
           (unsigned long long)r->bytes, seconds * 1000.0);
    fflush(stdout);
}

/* Once everything is written: a run whose events could not all be written says so by name
 * (a closed pipe loses the report, never the parameters). */
static void events_check(const char *params_file)
{
    int lost = events_lost();
    if (lost)
        refuse(REFUSAL_EVENTS_UNWRITABLE, "events could not be written to standard output (%s); "
               "the run went on%s%s", lost == EPIPE ? "broken pipe: its reader exited"
               : strerror(lost), params_file ? " and wrote its parameters to " : "",
               params_file ? params_file : "");
}

/* --predict: the forward pass on new inputs with given parameters; no data set is read and
 * nothing is trained. */
static _Noreturn void predict_only(const struct alpha_program *p, const struct options *o,
                                   uint32_t threads)
{
    float *params = checked_calloc(p->n_params ? p->n_params : 1, sizeof(float), "parameters");
    if (o->params_in) {
        predict_read_params(p, o->params_in, params);
    } else {
        struct resumed resumed;
        double started = files_now();
        resume_load(p, o->resume, params, NULL, 0, 0, &resumed);
        event_resumed(&resumed, files_now() - started);
    }
    pool_start(threads);
    uint32_t per_row = 0;
    uint32_t rows = predict_file(p, params, o->predict, o->predict_out, &per_row);
    printf("{\"event\":\"predicted\",\"role\":");
    json_string(stdout, alpha_role()->name);
    printf(",\"rows\":%u,\"outputs_per_row\":%u,\"out\":", (unsigned)rows,
           (unsigned)per_row);
    json_string(stdout, o->predict_out);
    printf("}\n");
    fflush(stdout);
    events_check(NULL);
    exit(0);
}

/* --evaluate-only: the capture's parameters evaluated; nothing trained, nothing written. */
static _Noreturn void evaluate_only(const struct alpha_program *p, const struct dataset *d,
                                    const float *params, const struct resumed *resumed)
{
    struct run_report report = {
        .role = alpha_role()->name,
        .steps = resumed->round,
        .final_loss = resumed->loss,
        .holdout_rows = p->holdout,
        .evaluate_only = 1,
    };
    struct sha256 h;
    uint8_t digest[32];
    sha256_init(&h);
    sha256_update(&h, params, p->n_params * sizeof(float));
    sha256_final(&h, digest);
    sha256_hex(digest, report.params_sha256);
    report.holdout_metric = evaluate_holdout(p, d, params);
    event_done(p, &report);
    events_check(NULL);
    exit(0);
}

int main(int argc, char **argv)
{
    const struct alpha_program *p = &ALPHA_PROGRAM;
    events_init();
    const struct alpha_role *role = alpha_role(); /* a role table is decoded here */
    refusal_context(role->name, 0);
    cpu_level_start(); /* which copy of the kernels runs: before anything can call one */
    struct options o = parse_options(argc, argv);
    lifeline_watch(); /* started by alpha run or alpha-tui: end with it, however it ends */
    check_program(p);
    uint32_t threads = o.threads ? o.threads : pool_cores();
    if (role->max_threads && threads > role->max_threads) {
        if (o.threads)
            refuse(REFUSAL_THREADS_OVER_CORES, "--threads %u is more than the %u cores the "
                   "pairing gives role %s", (unsigned)threads, (unsigned)role->max_threads,
                   role->name);
        threads = role->max_threads; /* the machine's cores, as many as the pairing gives */
    }
    if (o.predict) {
        if (role->n_links)
            refuse(REFUSAL_USAGE, "--predict runs a single-process build, not role %s of a plan",
                   role->name);
        if (alpha_device_start)
            refuse(REFUSAL_USAGE, "--predict runs on the CPU: build the system without a GPU "
                   "pairing");
        event_start(p);
        predict_only(p, &o, threads);
    }
    struct schedule s;
    schedule_check(&s, p, role);
    event_start(p);
    /* A GPU role's device, its memory and its kernels, before anything is read or written. */
    if (alpha_device_start)
        alpha_device_start();

    /* Where the run will write is checked before anything is read or trained, so a run that
     * cannot publish its parameters refuses now rather than after its last round. */
    if (role->writes_params && !o.evaluate_only)
        params_check(o.params_out);
    /* The launch secret, read at start-up by a role with links (and only then). */
    uint8_t secret[SECRET_BYTES] = {0};
    if (role->n_links > 0 && !o.evaluate_only)
        secret_load(o.secret_file, role->secret_file, secret);
    struct dataset d;
    data_load(p, o.data_path, &d);
    if (role->n_links)
        event_data(role->name, d.rows, d.parsed, d.shared);
    pool_start(threads);

    schedule_prepare(&s, o.checkpoint_dir);
    s.capture.keep = o.keep;
    if (o.resume) {
        struct resumed resumed;
        double started = files_now();
        resume_load(p, o.resume, s.params, s.applies ? s.state : NULL, s.state_start,
                    s.state_count, &resumed);
        event_resumed(&resumed, files_now() - started);
        if (o.evaluate_only)
            evaluate_only(p, &d, s.params, &resumed);
        schedule_restage(&s);
        s.first_round = resumed.round;
        s.loss = resumed.loss;
    }

    capture_start(&s.capture, s.first_round); /* the checkpoint folder, before round 0 */
    struct net net;
    if (alpha_open_links)
        alpha_open_links(&net, p, role, secret);
    else if (role->n_links)
        refuse(REFUSAL_PROGRAM_INVALID, "%s has links, but its executable was linked without the "
               "code that opens them", role->name);
    else
        net_init(&net, p, role);
    hmac_wipe(secret, sizeof secret); /* the links hold their own keys now */
    s.eval_every = o.eval_every;
    float loss = schedule_train(&s, &d, &net, o.step_every);
    const float *params = s.params;

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
    events_check(r.params_file);
    return 0;
}
