/* Heapsort (sort.h). */
#include "sort.h"

#include <stdint.h>
#include <stdlib.h>

#pragma clang attribute push(__attribute__((minsize)), apply_to = function)

static void swap_items(uint8_t *a, uint8_t *b, size_t size)
{
    for (size_t i = 0; i < size; i++) {
        uint8_t t = a[i];
        a[i] = b[i];
        b[i] = t;
    }
}

/* Moves item `root` down until the heap of the first n items is in order below it. */
static void sift_down(uint8_t *base, size_t root, size_t n, size_t size,
                      int (*compare)(const void *, const void *))
{
    for (;;) {
        size_t child = 2 * root + 1;
        if (child >= n)
            return;
        if (child + 1 < n && compare(base + child * size, base + (child + 1) * size) < 0)
            child++;
        if (compare(base + root * size, base + child * size) >= 0)
            return;
        swap_items(base + root * size, base + child * size, size);
        root = child;
    }
}

void sort_items(void *items, size_t n, size_t size, int (*compare)(const void *, const void *))
{
    uint8_t *base = items;
    for (size_t i = n / 2; i-- > 0;)
        sift_down(base, i, n, size, compare);
    for (size_t end = n; end-- > 1;) {
        swap_items(base, base + end * size, size);
        sift_down(base, 0, end, size, compare);
    }
}

/* The C library's qsort too (musl's getaddrinfo sorts its answers with it): defined here, the
 * linker takes this one and leaves the 9 KB library one out. */
void qsort(void *items, size_t n, size_t size, int (*compare)(const void *, const void *))
{
    sort_items(items, n, size, compare);
}

#pragma clang attribute pop
