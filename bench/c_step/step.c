/* Hand-written, fixed-order C baseline of the digits training step (bench/step_time.py).
 *
 * This is a speed baseline, not product code: it computes exactly the step that
 * examples/digits.alpha describes, in plain loops with a fixed order, so that the compiled
 * Alpha step can be compared against what a careful C programmer would write by hand.
 *
 *   data:   CSV, 64 integer features (0..16) then the class label; the first 1,500 rows train,
 *           example g of the run is row g mod 1500 (sequential batches, wrapping).
 *   step:   batch 64 = 8 leaves of 8 examples. Per leaf, in example order:
 *             xs = x / 16; z = xs @ w1 + b1; h = relu(z); logits = h @ w2 + b2;
 *             loss = softmax cross-entropy; the leaf gradient is the sum over its 8 examples.
 *           The 8 leaf gradients are added with a fixed binary tree
 *             ((g0 + g1) + (g2 + g3)) + ((g4 + g5) + (g6 + g7)),
 *           divided by 64, then Adam(lr 0.01, beta1 0.9, beta2 0.999, eps 1e-8) is applied.
 *   params: w1 f32[64,32], b1 f32[32], w2 f32[32,10], b2 f32[10], float32 throughout.
 *
 * Matmul loops are ordered so that the innermost loop runs over independent outputs
 * (for m, for k, for n: out[m][n] += a[m][k] * b[k][n]); the one product that would otherwise
 * reduce in its inner loop (dh = dlogits @ w2^T) reads a transposed copy of w2 made once per step.
 * exp and log come from libm (expf, logf): this is a speed baseline, and they are called only
 * 10 + 1 times per example. sqrt is __builtin_sqrtf (a single instruction).
 *
 * Build:  gcc -O3 -march=x86-64-v2 -ffp-contract=off -o step step.c -lm
 * Run:    ./step CSV STEPS      (prints {"steps":N,"seconds":S,...} on one line)
 * Only the step loop is timed (clock_gettime, CLOCK_MONOTONIC); loading the CSV is not.
 */
#define _POSIX_C_SOURCE 199309L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FEATURES 64
#define HIDDEN 32
#define CLASSES 10
#define BATCH 64
#define LEAVES 8
#define LEAF (BATCH / LEAVES)
#define TRAIN_ROWS 1500
#define MAX_ROWS 4096

/* Flat parameter layout: w1, b1, w2, b2. */
#define OFF_W1 0
#define OFF_B1 (OFF_W1 + FEATURES * HIDDEN)
#define OFF_W2 (OFF_B1 + HIDDEN)
#define OFF_B2 (OFF_W2 + HIDDEN * CLASSES)
#define N_PARAMS (OFF_B2 + CLASSES)

static float data_x[MAX_ROWS][FEATURES];
static int32_t data_y[MAX_ROWS];

static float params[N_PARAMS];
static float adam_m[N_PARAMS];
static float adam_v[N_PARAMS];
static float leaf_grad[LEAVES][N_PARAMS];
static float grad_sum[N_PARAMS];

static int load_csv(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) {
        perror(path);
        return -1;
    }
    int rows = 0;
    char line[4096];
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '\n' || line[0] == '\0') continue;
        if (rows >= MAX_ROWS) break;
        char *p = line;
        for (int j = 0; j <= FEATURES; j++) {
            char *end;
            long v = strtol(p, &end, 10);
            if (end == p) {
                fprintf(stderr, "%s: bad row %d\n", path, rows + 1);
                fclose(f);
                return -1;
            }
            if (j < FEATURES)
                data_x[rows][j] = (float)v;
            else
                data_y[rows] = (int32_t)v;
            p = end;
            if (*p == ',') p++;
        }
        rows++;
    }
    fclose(f);
    return rows;
}

/* Deterministic initial parameters, shared with bench/peers.py so that the first-step losses
 * of all baselines agree: u(i) = ((i * 2654435761 + seed) mod 2^32) / 2^32 - 0.5,
 * w = u * 2 * sqrt(6 / (fan_in + fan_out)) computed in double and rounded to float; biases 0. */
static void init_tensor(float *w, int fan_in, int fan_out, uint32_t seed) {
    double scale = 2.0 * sqrt(6.0 / (double)(fan_in + fan_out));
    for (int i = 0; i < fan_in * fan_out; i++) {
        uint32_t h = (uint32_t)((uint64_t)i * 2654435761u + seed);
        double u = (double)h / 4294967296.0 - 0.5;
        w[i] = (float)(u * scale);
    }
}

/* Forward and backward of one leaf of LEAF examples; writes the leaf gradient (sum over its
 * examples in index order) into g and returns the sum of the examples' losses. */
static float leaf_step(const float *restrict p, const float *restrict w2t, const int *rows,
                       float *restrict g) {
    const float *w1 = p + OFF_W1, *b1 = p + OFF_B1, *w2 = p + OFF_W2, *b2 = p + OFF_B2;
    float *gw1 = g + OFF_W1, *gb1 = g + OFF_B1, *gw2 = g + OFF_W2, *gb2 = g + OFF_B2;
    float xs[LEAF][FEATURES], z[LEAF][HIDDEN], h[LEAF][HIDDEN], lg[LEAF][CLASSES];
    float dl[LEAF][CLASSES], dz[LEAF][HIDDEN];
    float loss = 0.0f;

    for (int m = 0; m < LEAF; m++)
        for (int k = 0; k < FEATURES; k++) xs[m][k] = data_x[rows[m]][k] / 16.0f;

    /* z = xs @ w1 + b1; h = relu(z) */
    for (int m = 0; m < LEAF; m++) {
        for (int n = 0; n < HIDDEN; n++) z[m][n] = 0.0f;
        for (int k = 0; k < FEATURES; k++) {
            float a = xs[m][k];
            for (int n = 0; n < HIDDEN; n++) z[m][n] += a * w1[k * HIDDEN + n];
        }
        for (int n = 0; n < HIDDEN; n++) {
            z[m][n] += b1[n];
            h[m][n] = z[m][n] > 0.0f ? z[m][n] : 0.0f;
        }
    }

    /* logits = h @ w2 + b2 */
    for (int m = 0; m < LEAF; m++) {
        for (int n = 0; n < CLASSES; n++) lg[m][n] = 0.0f;
        for (int k = 0; k < HIDDEN; k++) {
            float a = h[m][k];
            for (int n = 0; n < CLASSES; n++) lg[m][n] += a * w2[k * CLASSES + n];
        }
        for (int n = 0; n < CLASSES; n++) lg[m][n] += b2[n];
    }

    /* softmax cross-entropy; dl = softmax - onehot */
    for (int m = 0; m < LEAF; m++) {
        float mx = lg[m][0];
        for (int n = 1; n < CLASSES; n++) mx = lg[m][n] > mx ? lg[m][n] : mx;
        float e[CLASSES], s = 0.0f;
        for (int n = 0; n < CLASSES; n++) {
            e[n] = expf(lg[m][n] - mx);
            s += e[n];
        }
        int y = data_y[rows[m]];
        loss += (logf(s) + mx) - lg[m][y];
        for (int n = 0; n < CLASSES; n++) dl[m][n] = e[n] / s;
        dl[m][y] -= 1.0f;
    }

    /* gw2 = h^T @ dl, gb2 = sum dl (examples in index order) */
    memset(g, 0, sizeof(float) * N_PARAMS);
    for (int m = 0; m < LEAF; m++) {
        for (int k = 0; k < HIDDEN; k++) {
            float a = h[m][k];
            for (int n = 0; n < CLASSES; n++) gw2[k * CLASSES + n] += a * dl[m][n];
        }
        for (int n = 0; n < CLASSES; n++) gb2[n] += dl[m][n];
    }

    /* dh = dl @ w2^T (via w2t[CLASSES][HIDDEN]); dz = dh * (z > 0) */
    for (int m = 0; m < LEAF; m++) {
        float dh[HIDDEN];
        for (int n = 0; n < HIDDEN; n++) dh[n] = 0.0f;
        for (int k = 0; k < CLASSES; k++) {
            float a = dl[m][k];
            for (int n = 0; n < HIDDEN; n++) dh[n] += a * w2t[k * HIDDEN + n];
        }
        for (int n = 0; n < HIDDEN; n++) dz[m][n] = z[m][n] > 0.0f ? dh[n] : 0.0f;
    }

    /* gw1 = xs^T @ dz, gb1 = sum dz (examples in index order) */
    for (int m = 0; m < LEAF; m++) {
        for (int k = 0; k < FEATURES; k++) {
            float a = xs[m][k];
            for (int n = 0; n < HIDDEN; n++) gw1[k * HIDDEN + n] += a * dz[m][n];
        }
        for (int n = 0; n < HIDDEN; n++) gb1[n] += dz[m][n];
    }
    return loss;
}

/* One round: 8 leaves, tree combine, divide by the batch, Adam. Returns the mean loss. */
static float train_step(uint64_t step, float *b1t, float *b2t) {
    const float lr = 0.01f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f;
    float w2t[CLASSES * HIDDEN];
    for (int k = 0; k < HIDDEN; k++)
        for (int n = 0; n < CLASSES; n++) w2t[n * HIDDEN + k] = params[OFF_W2 + k * CLASSES + n];

    float leaf_loss[LEAVES];
    for (int l = 0; l < LEAVES; l++) {
        int rows[LEAF];
        for (int m = 0; m < LEAF; m++)
            rows[m] = (int)((step * BATCH + (uint64_t)(l * LEAF + m)) % TRAIN_ROWS);
        leaf_loss[l] = leaf_step(params, w2t, rows, leaf_grad[l]);
    }

    /* fixed binary tree: ((0+1)+(2+3))+((4+5)+(6+7)) */
    for (int i = 0; i < N_PARAMS; i++) {
        float a = leaf_grad[0][i] + leaf_grad[1][i];
        float b = leaf_grad[2][i] + leaf_grad[3][i];
        float c = leaf_grad[4][i] + leaf_grad[5][i];
        float d = leaf_grad[6][i] + leaf_grad[7][i];
        grad_sum[i] = (a + b) + (c + d);
    }
    float loss = ((leaf_loss[0] + leaf_loss[1]) + (leaf_loss[2] + leaf_loss[3])) +
                 ((leaf_loss[4] + leaf_loss[5]) + (leaf_loss[6] + leaf_loss[7]));

    /* Adam; bias corrections from running powers of beta1 and beta2 */
    *b1t *= beta1;
    *b2t *= beta2;
    const float c1 = 1.0f - *b1t, c2 = 1.0f - *b2t;
    for (int i = 0; i < N_PARAMS; i++) {
        float gr = grad_sum[i] / (float)BATCH;
        adam_m[i] = beta1 * adam_m[i] + (1.0f - beta1) * gr;
        adam_v[i] = beta2 * adam_v[i] + (1.0f - beta2) * (gr * gr);
        float mhat = adam_m[i] / c1;
        float vhat = adam_v[i] / c2;
        params[i] -= lr * mhat / (__builtin_sqrtf(vhat) + eps);
    }
    return loss / (float)BATCH;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s CSV STEPS\n", argv[0]);
        return 2;
    }
    long steps = strtol(argv[2], NULL, 10);
    if (steps < 1) {
        fprintf(stderr, "STEPS must be positive\n");
        return 2;
    }
    int rows = load_csv(argv[1]);
    if (rows < TRAIN_ROWS) {
        fprintf(stderr, "%s: need at least %d rows, got %d\n", argv[1], TRAIN_ROWS, rows);
        return 1;
    }
    init_tensor(params + OFF_W1, FEATURES, HIDDEN, 1u);
    init_tensor(params + OFF_W2, HIDDEN, CLASSES, 2u);

    float b1t = 1.0f, b2t = 1.0f, first_loss = 0.0f, last_loss = 0.0f;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long s = 0; s < steps; s++) {
        last_loss = train_step((uint64_t)s, &b1t, &b2t);
        if (s == 0) first_loss = last_loss;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double seconds = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    printf("{\"steps\":%ld,\"seconds\":%.9f,\"first_loss\":%.7g,\"last_loss\":%.7g}\n", steps,
           seconds, (double)first_loss, (double)last_loss);
    return 0;
}
