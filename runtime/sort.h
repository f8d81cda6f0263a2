/* An in-place heapsort with qsort's interface. The libc qsort that zig links is a 9 KB block
 * sort; the runtime sorts a few lists at start-up and after a publication (shards by position,
 * captures by round), for which O(n log n) in a few hundred bytes is what matters; sort.c also
 * defines qsort with it, so the library one is never linked. Not stable, which no caller
 * needs. */
#ifndef ALPHA_SORT_H
#define ALPHA_SORT_H

#include <stddef.h>

void sort_items(void *items, size_t n, size_t size, int (*compare)(const void *, const void *));

#endif
