/* Named refusals: the runtime's only way to stop early. */
#include "refusal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "events.h"

static const char *context_role;
static uint32_t context_round;

void refusal_context(const char *role, uint32_t round)
{
    context_role = role;
    context_round = round;
}

void refuse(const char *name, const char *format, ...)
{
    char message[1024];
    va_list args;
    va_start(args, format);
    vsnprintf(message, sizeof message, format, args);
    va_end(args);

    fputs("{\"event\":\"refused\",\"name\":", stdout);
    json_string(stdout, name);
    fputs(",\"message\":", stdout);
    json_string(stdout, message);
    if (context_role) {
        fputs(",\"role\":", stdout);
        json_string(stdout, context_role);
    }
    if (context_round)
        printf(",\"round\":%u}\n", (unsigned)context_round);
    else
        fputs(",\"round\":null}\n", stdout);
    fflush(stdout);
    fprintf(stderr, "error[%s]: %s\n", name, message);
    fflush(stderr);
    exit(strcmp(name, REFUSAL_USAGE) == 0 ? ALPHA_EXIT_USAGE : ALPHA_EXIT_REFUSED);
}

void *checked_grow(void *items, uint32_t n, uint32_t *cap, size_t size, uint32_t first,
                   const char *what)
{
    if (n < *cap)
        return items;
    uint32_t grown = *cap ? 2 * *cap : first;
    void *p = grown > *cap ? realloc(items, (size_t)grown * size) : NULL;
    if (!p)
        refuse(REFUSAL_OUT_OF_MEMORY, "cannot grow %s to %u items", what, (unsigned)grown);
    *cap = grown;
    return p;
}

void *checked_calloc(size_t count, size_t size, const char *what)
{
    /* calloc(0, ...) may return NULL legitimately; ask for one element so NULL means failure. */
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p)
        refuse(REFUSAL_OUT_OF_MEMORY, "cannot allocate %zu x %zu bytes for %s", count, size,
               what);
    return p;
}
