/* Which copy of the kernels runs: an x86-64 build carries one per level (v2, v3, v4) and takes
 * the widest the CPU and the OS support, or the one ALPHA_CPU_LEVEL names (for tests); a build
 * for one CPU (`--cpu`, AArch64) carries one. The copies give the same bits: only the speed
 * differs. The dispatcher the compiler generates (alpha_core/codegen/levels.py) calls these. */
#ifndef ALPHA_CPU_LEVEL_H
#define ALPHA_CPU_LEVEL_H

#define CPU_LEVEL_VARIABLE "ALPHA_CPU_LEVEL"
/* "1" or "0": whether the AVX2 product kernel folds all of B's loads into its multiplies (the
 * default on CPUs that split 256-bit operations, Zen 1) or holds two vectors in registers (the
 * others); for tests: the bits are the same either way. */
#define GEMM_FOLD_VARIABLE "ALPHA_GEMM_FOLD"

/* The index in names[0..n) of the level to run: the one ALPHA_CPU_LEVEL names, or the widest
 * this CPU supports. -1 with *refused set to why when ALPHA_CPU_LEVEL names a level that is not
 * among them or that this CPU lacks. */
int cpu_level_choose(const char *const *names, int n, const char **refused);
/* For a build with one copy: `name`, or NULL with *refused set when ALPHA_CPU_LEVEL names
 * another level or when this CPU lacks x86-64 level `needs` (3 or 4; 0 or 2: no check), the
 * level whose instructions the copy uses. */
const char *cpu_level_pinned(const char *name, int needs, const char **refused);

/* Chooses the level at start-up, before anything calls a kernel (refuses
 * cpu-level-unsupported), and how the AVX2 product kernel loads B; returns the level's name,
 * NULL for kernels without levels (a GPU role's, the tests' fixtures). */
const char *cpu_level_start(void);
/* The level chosen by cpu_level_start, or NULL. */
const char *cpu_level_name(void);

#endif
