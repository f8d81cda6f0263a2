/* The frame MAC alone against HMAC-SHA256 and CRC-32C, as the runtime compiles them: each over
 * a frame of a given size (the header, the payload, the loss float), best of several timed
 * batches, in GB/s. Built and run by bench/frame_mac.py. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "crc32c.h"
#include "frame_mac.h"
#include "hmac.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static volatile uint8_t sink;

/* Seconds per call of what `which` names over n bytes, best of 7 batches of `reps` calls. */
static double best(int which, const uint8_t *data, size_t n, int reps)
{
    uint8_t key[32] = {1, 2, 3}, out[32];
    struct frame_key fk;
    frame_key_init(&fk, key);
    struct hmac hk;
    hmac_init(&hk, key, 32);
    double fastest = 1e30;
    for (int batch = 0; batch < 7; batch++) {
        double t0 = now();
        for (int r = 0; r < reps; r++) {
            if (which <= 1) {
                frame_mac_portable(which);
                frame_mac(&fk, (uint64_t)r, data, data + 64, n - 68, data + n - 4, 4, out);
            } else if (which == 2) {
                struct hmac h = hk;
                hmac_update(&h, data, n);
                hmac_update(&h, out, 8);
                hmac_final(&h, out);
            } else {
                out[0] = (uint8_t)crc32c(data + 64, n - 64);
            }
            sink ^= out[0];
        }
        double t = (now() - t0) / reps;
        if (t < fastest)
            fastest = t;
    }
    frame_mac_portable(0);
    return fastest;
}

int main(int argc, char **argv)
{
    static const char *names[] = {"frame MAC (carry-less multiply)", "frame MAC (portable)",
                                  "HMAC-SHA256", "CRC-32C of the payload"};
    for (int a = 1; a < argc; a++) {
        size_t n = (size_t)strtoull(argv[a], NULL, 10);
        uint8_t *data = malloc(n);
        for (size_t i = 0; i < n; i++)
            data[i] = (uint8_t)(i * 131 + 7);
        int reps = n > (1u << 20) ? 8 : 2000;
        for (int which = 0; which < 4; which++) {
            double t = best(which, data, n, which == 1 ? (reps + 9) / 10 : reps);
            printf("%zu bytes  %-32s %10.2f us  %6.2f GB/s\n", n, names[which], t * 1e6,
                   (double)n / t / 1e9);
        }
        free(data);
    }
    return 0;
}
