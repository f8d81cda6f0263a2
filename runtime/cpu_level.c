/* The CPU level the kernels run at: see cpu_level.h. */
#include "cpu_level.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alpha_program.h"
#include "refusal.h"

#if defined(__x86_64__)
#include <cpuid.h>

/* Whether this CPU runs code built for x86-64 level `v` (2, 3 or 4), the OS saving the
 * registers the level uses (XCR0: SSE and AVX state for v3, also the opmask and ZMM state for
 * v4). Level 2 is the baseline every executable is built for. */
static int supports(int v)
{
    unsigned a, b, c, d, xcr0 = 0, high = 0;
    if (v <= 2)
        return 1;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return 0;
    int fma = c & (1u << 12), movbe = c & (1u << 22), osxsave = c & (1u << 27);
    int avx = c & (1u << 28), f16c = c & (1u << 29);
    if (!(fma && movbe && osxsave && avx && f16c))
        return 0;
    __asm__ volatile("xgetbv" : "=a"(xcr0), "=d"(high) : "c"(0));
    if ((xcr0 & 0x6) != 0x6)
        return 0;
    unsigned ea, eb, ec, ed;
    if (!__get_cpuid(0x80000001, &ea, &eb, &ec, &ed) || !(ec & (1u << 5))) /* LZCNT */
        return 0;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d))
        return 0;
    int avx2 = b & (1u << 5), bmi1 = b & (1u << 3), bmi2 = b & (1u << 8);
    if (!(avx2 && bmi1 && bmi2))
        return 0;
    if (v == 3)
        return 1;
    /* AVX512F, DQ, CD, BW, VL */
    unsigned avx512 = (1u << 16) | (1u << 17) | (1u << 28) | (1u << 30) | (1u << 31);
    return v == 4 && (xcr0 & 0xe6) == 0xe6 && (b & avx512) == avx512;
}

/* Whether the CPU splits each 256-bit operation in two, so that its floating-point unit, not
 * its load ports, limits the AVX2 product kernel: AMD family 17h below model 30h (Zen, Zen+)
 * and Hygon family 18h (a Zen core). */
static int splits_256(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(0, &a, &b, &c, &d))
        return 0;
    int amd = b == 0x68747541u && d == 0x69746e65u && c == 0x444d4163u;   /* AuthenticAMD */
    int hygon = b == 0x6f677948u && d == 0x6e65476eu && c == 0x656e6975u; /* HygonGenuine */
    if (!(amd || hygon) || !__get_cpuid(1, &a, &b, &c, &d))
        return 0;
    unsigned family = (a >> 8) & 0xf, model = (a >> 4) & 0xf;
    if (family == 0xf) {
        family += (a >> 20) & 0xff;
        model |= ((a >> 16) & 0xf) << 4;
    }
    return (amd && family == 0x17 && model < 0x30) || (hygon && family == 0x18);
}

/* 2, 3 or 4 for "x86-64-v2" .. "x86-64-v4", else 0. */
static int level_of(const char *name)
{
    if (strncmp(name, "x86-64-v", 8) == 0 && name[8] >= '2' && name[8] <= '4' && !name[9])
        return name[8] - '0';
    return 0;
}
#else
static int splits_256(void) { return 0; }
static int supports(int v) { return v == 0; }
static int level_of(const char *name) { (void)name; return 0; }
#endif

static char why[512];

int cpu_level_choose(const char *const *names, int n, const char **refused)
{
    *refused = NULL;
    const char *wanted = getenv(CPU_LEVEL_VARIABLE);
    if (wanted && *wanted) {
        for (int i = 0; i < n; i++) {
            if (strcmp(names[i], wanted) != 0)
                continue;
            if (supports(level_of(names[i])))
                return i;
            snprintf(why, sizeof why, "%s=%s: this CPU lacks what %s needs (or the OS does not "
                     "save its registers)", CPU_LEVEL_VARIABLE, wanted, wanted);
            *refused = why;
            return -1;
        }
        int used = snprintf(why, sizeof why, "%s=%s: this executable carries the kernels of ",
                            CPU_LEVEL_VARIABLE, wanted);
        for (int i = 0; i < n && used > 0 && (size_t)used < sizeof why; i++)
            used += snprintf(why + used, sizeof why - (size_t)used, "%s%s", i ? ", " : "",
                             names[i]);
        *refused = why;
        return -1;
    }
    int best = -1;
    for (int i = 0; i < n; i++)
        if (supports(level_of(names[i])))
            best = i;
    if (best < 0) {
        /* only an executable without an x86-64-v2 copy gets here: a system of `arithmetic
         * fused`, whose products need FMA */
        int used = snprintf(why, sizeof why, "this CPU runs none of the kernels this "
                            "executable carries (");
        for (int i = 0; i < n && used > 0 && (size_t)used < sizeof why; i++)
            used += snprintf(why + used, sizeof why - (size_t)used, "%s%s", i ? ", " : "",
                             names[i]);
        if (used > 0 && (size_t)used < sizeof why)
            snprintf(why + used, sizeof why - (size_t)used, "): its system's arithmetic is "
                     "fused, and a fused multiply-add needs FMA (x86-64-v3 or later)");
        *refused = why;
    }
    return best;
}

const char *cpu_level_pinned(const char *name, int needs, const char **refused)
{
    *refused = NULL;
    const char *wanted = getenv(CPU_LEVEL_VARIABLE);
    if (wanted && *wanted && strcmp(wanted, name) != 0) {
        snprintf(why, sizeof why, "%s=%s: this executable carries only the kernels of %s (built "
                 "for one CPU)", CPU_LEVEL_VARIABLE, wanted, name);
        *refused = why;
        return NULL;
    }
    if (needs > 2 && !supports(needs)) {
        snprintf(why, sizeof why, "this executable was built for one CPU, %s, whose kernels use "
                 "the instructions of x86-64-v%d, and this CPU lacks them (or the OS does not "
                 "save their registers): build it without --cpu to carry every level", name,
                 needs);
        *refused = why;
        return NULL;
    }
    return name;
}

static const char *chosen;

/* Defined (1) by the kernels of an executable whose AVX2 product kernel folds B's loads into
 * its multiplies (alpha_core/codegen/gemm.py, FOLD_SYMBOL); absent from the others. */
extern int64_t alpha_gemm_fold __attribute__((weak));

const char *cpu_level_start(void)
{
    if (&alpha_gemm_fold) { /* every row of a tile reads all of B, or two vectors are held */
        const char *forced = getenv(GEMM_FOLD_VARIABLE);
        alpha_gemm_fold = forced && *forced ? forced[0] != '0' : splits_256();
    }
    if (!alpha_cpu_level)
        return NULL;
    const char *refused = NULL;
    chosen = alpha_cpu_level(&refused);
    if (refused)
        refuse(REFUSAL_CPU_LEVEL, "%s", refused);
    return chosen;
}

const char *cpu_level_name(void) { return chosen; }
