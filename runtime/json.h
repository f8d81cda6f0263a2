/* A small strict JSON reader for checkpoint manifests (resume.c). It accepts RFC 8259 JSON with
 * a nesting limit, refuses duplicate keys and NUL characters in strings, and keeps numbers only
 * as non-negative integers (anything else is marked as not an integer). */
#ifndef ALPHA_JSON_H
#define ALPHA_JSON_H

#include <stdint.h>

enum json_type { JSON_NULL, JSON_FALSE, JSON_TRUE, JSON_NUMBER, JSON_STRING, JSON_ARRAY,
                 JSON_OBJECT };

struct json {
    enum json_type type;
    const char *key;      /* the member's name, inside an object */
    const char *string;   /* JSON_STRING, decoded and NUL-terminated */
    uint64_t integer;     /* JSON_NUMBER that is a non-negative integer below 2^64 */
    int is_integer;
    struct json *child;   /* first element or member */
    struct json *next;    /* next sibling */
};

/* Parses text (NUL-terminated, decoded in place, so it must outlive the tree). NULL and a
 * message in error (160 bytes) when it is not one JSON value. */
struct json *json_parse(char *text, char error[160]);
void json_free(struct json *value);

/* The member `key` of an object (NULL when absent or when object is not an object). */
const struct json *json_get(const struct json *object, const char *key);
/* The member as a string or an integer: NULL / -1 when absent or of another type. */
const char *json_get_string(const struct json *object, const char *key);
int json_get_u64(const struct json *object, const char *key, uint64_t *out);

#endif
