/* JSON-lines events. Every event is one line on stdout, flushed as soon as it is complete.
 *
 * A stdout that cannot be written (the reader of the pipe exited, a full device) must not cost
 * the run: SIGPIPE is ignored, the first failed write is remembered and no further step event
 * is attempted, and main() refuses events-unwritable only once the parameters are written. */
#define _DEFAULT_SOURCE /* syscall() */
#include "events.h"

#include "cpu_level.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static int lost_errno; /* the first failed write's errno; 0 while every event was written */

void events_init(void)
{
    /* Without this the first write into a closed pipe kills the process (status 141) before
     * it writes its parameters; sockets already send with MSG_NOSIGNAL. The kernel's own
     * rt_sigaction (its struct: handler, flags, restorer, mask; the same on x86-64 and AArch64)
     * rather than signal(), whose libc wrapper costs 800 bytes of the executable: ignoring a
     * signal needs no restorer and no mask. */
    struct {
        void (*handler)(int);
        unsigned long flags;
        void (*restorer)(void);
        unsigned long mask;
    } ignore = {SIG_IGN, 0, 0, 0};
    syscall(SYS_rt_sigaction, SIGPIPE, &ignore, (void *)0, sizeof ignore.mask);
}

/* Defined only by a GPU role's bridge (gpu_role.c). */
extern uint64_t alpha_device_kernel_us(void) __attribute__((weak));
extern void alpha_device_copies(uint64_t *to_device, uint64_t *to_host) __attribute__((weak));
extern void alpha_device_kernels_event(void) __attribute__((weak));

/* Flushes the event just printed; remembers the first failure. */
static void event_end(void)
{
    /* the write may already have failed inside printf (stdout starts line-buffered) */
    if ((fflush(stdout) != 0 || ferror(stdout)) && !lost_errno)
        lost_errno = errno ? errno : EIO;
}

int events_lost(void)
{
    return lost_errno ? lost_errno : ferror(stdout) ? EIO : 0;
}

void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        case '\t': fputs("\\t", f); break;
        default:
            if (*p < 0x20 || *p == 0x7f)
                fprintf(f, "\\u%04x", *p);
            else
                fputc(*p, f);   /* bytes >= 0x80 pass through: names and paths are UTF-8 */
        }
    }
    fputc('"', f);
}

static uint32_t float_bits(float v)
{
    uint32_t bits;
    memcpy(&bits, &v, sizeof bits);
    return bits;
}

static int is_finite(float v) { return ((float_bits(v) >> 23) & 0xff) != 0xff; }

/* "loss":<number or null>,"loss_bits":"<hex>" — JSON has no NaN or infinity, so a non-finite
 * value is null and only its bits say which. %.9g round-trips a float32. */
static void loss_fields(FILE *f, const char *key, float v)
{
    fprintf(f, "\"%s\":", key);
    if (is_finite(v))
        fprintf(f, "%.9g", (double)v);
    else
        fputs("null", f);
    fprintf(f, ",\"%s_bits\":\"%08x\"", key, (unsigned)float_bits(v));
}

static void metric_field(FILE *f, const char *key, double v, int present)
{
    fprintf(f, ",\"%s\":", key);
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    if (present && ((bits >> 52) & 0x7ff) != 0x7ff)
        fprintf(f, "%.9g", v);
    else
        fputs("null", f);
}

void event_evaluated(const struct alpha_program *p, uint32_t round, double metric)
{
    if (ferror(stdout))
        return;
    printf("{\"event\":\"evaluated\",\"round\":%u,\"holdout_rows\":%u", (unsigned)round,
           (unsigned)p->holdout);
    const char *key = p->label_kind == ALPHA_LABEL_CLASS ? "holdout_accuracy" : "holdout_mse";
    metric_field(stdout, key, metric, 1);
    fputs("}\n", stdout);
    event_end();
}

void event_start(const struct alpha_program *p)
{
    if (ferror(stdout))
        return;
    fputs("{\"event\":\"start\",\"system\":", stdout);
    json_string(stdout, p->system);
    fputs(",\"identity\":", stdout);
    json_string(stdout, p->identity);
    printf(",\"params\":%llu,\"steps\":%u,\"batch\":%u,\"leaves\":%u,\"leaf_size\":%u",
           (unsigned long long)p->n_params, (unsigned)p->steps, (unsigned)p->batch,
           (unsigned)p->leaves, (unsigned)p->leaf_size);
    if (cpu_level_name()) { /* the copy of the kernels this CPU runs (cpu_level.c) */
        fputs(",\"cpu\":", stdout);
        json_string(stdout, cpu_level_name());
    }
    fputs("}\n", stdout);
    event_end();
}

void event_data(const char *role, uint32_t rows, uint32_t parsed, int shared)
{
    if (ferror(stdout))
        return;
    fputs("{\"event\":\"data\",\"role\":", stdout);
    json_string(stdout, role);
    printf(",\"rows\":%u,\"parsed\":%u,\"shared\":%s}\n", (unsigned)rows, (unsigned)parsed,
           shared ? "true" : "false");
    event_end();
}

void event_step(uint32_t step, float loss, const char *role, const struct addition *adds,
                uint32_t n_adds, uint64_t frames, uint64_t bytes)
{
    if (ferror(stdout))
        return; /* nobody reads them any more: train on quietly */
    printf("{\"event\":\"step\",\"step\":%u,", (unsigned)step);
    loss_fields(stdout, "loss", loss);
    fputs(",\"role\":", stdout);
    json_string(stdout, role);
    fputs(",\"combine\":[", stdout);
    for (uint32_t i = 0; i < n_adds; i++) {
        const struct addition *a = &adds[i];
        printf("%s\"%u:%u=%u:%u+%u:%u\"", i ? "," : "", (unsigned)a->lo, (unsigned)a->hi,
               (unsigned)a->lo, (unsigned)a->mid, (unsigned)a->mid, (unsigned)a->hi);
    }
    printf("],\"frames\":%llu,\"bytes\":%llu", (unsigned long long)frames,
           (unsigned long long)bytes);
    if (alpha_device_kernel_us) /* a GPU role: its kernels' time this round */
        printf(",\"kernel_us\":%llu", (unsigned long long)alpha_device_kernel_us());
    if (alpha_device_copies) { /* and the bytes it copied each way this round */
        uint64_t to_device, to_host;
        alpha_device_copies(&to_device, &to_host);
        printf(",\"to_device\":%llu,\"to_host\":%llu", (unsigned long long)to_device,
               (unsigned long long)to_host);
    }
    fputs("}\n", stdout);
    event_end();
}

void event_done(const struct alpha_program *p, const struct run_report *r)
{
    if (ferror(stdout))
        return;
    if (alpha_device_kernels_event) /* a GPU role: where its kernels' time went */
        alpha_device_kernels_event();
    fputs("{\"event\":\"done\",\"system\":", stdout);
    json_string(stdout, p->system);
    fputs(",\"role\":", stdout);
    json_string(stdout, r->role);
    printf(",\"steps\":%u,", (unsigned)r->steps);
    if (r->steps > 0)
        loss_fields(stdout, "final_loss", r->final_loss);
    else
        fputs("\"final_loss\":null,\"final_loss_bits\":null", stdout);
    if (!r->params_file && !r->evaluate_only) {
        fputs("}\n", stdout);
        event_end();
        return;
    }
    fputs(",\"params_file\":", stdout);
    if (r->params_file)
        json_string(stdout, r->params_file);
    else
        fputs("null,\"evaluate_only\":true", stdout);
    printf(",\"params_sha256\":\"%s\",\"holdout_rows\":%u", r->params_sha256,
           (unsigned)r->holdout_rows);
    const char *key = p->label_kind == ALPHA_LABEL_CLASS ? "holdout_accuracy" : "holdout_mse";
    metric_field(stdout, key, r->holdout_metric, r->holdout_rows > 0);
    fputs("}\n", stdout);
    event_end();
}
