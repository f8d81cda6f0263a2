/* A recursive-descent JSON reader (json.h). Strings are decoded in place: an escape never
 * decodes to more bytes than it takes, so the text holds the result. */
#include "json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JSON_DEPTH 32

struct parser {
    char *at;
    char *error;
    int failed;
};

/* Records the first error; returns 0 for `return fail(...)`. */
static int fail(struct parser *p, const char *what)
{
    if (!p->failed)
        snprintf(p->error, 160, "%s", what);
    p->failed = 1;
    return 0;
}

static void skip_space(struct parser *p)
{
    while (*p->at == ' ' || *p->at == '\t' || *p->at == '\n' || *p->at == '\r')
        p->at++;
}

static struct json *node(struct parser *p, enum json_type type)
{
    struct json *v = calloc(1, sizeof *v);
    if (!v)
        fail(p, "out of memory");
    else
        v->type = type;
    return v;
}

static int hex4(const char *s, unsigned *out)
{
    *out = 0;
    for (int i = 0; i < 4; i++) {
        char c = s[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0)
            return -1;
        *out = *out << 4 | (unsigned)d;
    }
    return 0;
}

/* Writes code point u as UTF-8 at out; returns the bytes written. */
static int utf8(char *out, unsigned u)
{
    if (u < 0x80)
        return out[0] = (char)u, 1;
    if (u < 0x800)
        return out[0] = (char)(0xc0 | u >> 6), out[1] = (char)(0x80 | (u & 0x3f)), 2;
    if (u < 0x10000)
        return out[0] = (char)(0xe0 | u >> 12), out[1] = (char)(0x80 | (u >> 6 & 0x3f)),
               out[2] = (char)(0x80 | (u & 0x3f)), 3;
    return out[0] = (char)(0xf0 | u >> 18), out[1] = (char)(0x80 | (u >> 12 & 0x3f)),
           out[2] = (char)(0x80 | (u >> 6 & 0x3f)), out[3] = (char)(0x80 | (u & 0x3f)), 4;
}

/* The string starting at the opening quote; NULL on error. */
static const char *string(struct parser *p)
{
    char *start = ++p->at, *from = start, *to = start;
    for (;;) {
        unsigned char c = (unsigned char)*from;
        if (c == '"')
            break;
        if (c < 0x20) {
            fail(p, c ? "a control character in a string" : "an unterminated string");
            return NULL;
        }
        if (c != '\\') {
            *to++ = *from++;
            continue;
        }
        char e = from[1];
        const char *plain = e ? strchr("\"\\/bfnrt", e) : NULL;
        if (plain) {
            *to++ = "\"\\/\b\f\n\r\t"[plain - "\"\\/bfnrt"];
            from += 2;
            continue;
        }
        unsigned u, low;
        if (e != 'u' || hex4(from + 2, &u) != 0) {
            fail(p, "a bad escape in a string");
            return NULL;
        }
        from += 6;
        if (u >= 0xd800 && u < 0xdc00 && from[0] == '\\' && from[1] == 'u' &&
            hex4(from + 2, &low) == 0 && low >= 0xdc00 && low < 0xe000) {
            u = 0x10000 + ((u - 0xd800) << 10) + (low - 0xdc00);
            from += 6;
        }
        if (u == 0 || (u >= 0xd800 && u < 0xe000)) {
            fail(p, "a NUL or an unpaired surrogate in a string");
            return NULL;
        }
        to += utf8(to, u);
    }
    p->at = from + 1;
    *to = '\0'; /* after moving on: `to` may be the closing quote itself */
    return start;
}

static int digit(char c) { return c >= '0' && c <= '9'; }

static int number(struct parser *p, struct json *v)
{
    char *s = p->at;
    int negative = *s == '-', integer = 1;
    s += negative;
    if (!digit(*s))
        return fail(p, "a bad number");
    if (*s == '0' && digit(s[1]))
        return fail(p, "a number with a leading zero");
    uint64_t value = 0;
    for (; digit(*s); s++) {
        uint64_t d = (uint64_t)(*s - '0');
        if (value > (UINT64_MAX - d) / 10)
            integer = 0;
        value = value * 10 + d;
    }
    if (*s == '.') {
        integer = 0;
        if (!digit(*++s))
            return fail(p, "a bad fraction");
        while (digit(*s))
            s++;
    }
    if (*s == 'e' || *s == 'E') {
        integer = 0;
        s += s[1] == '+' || s[1] == '-' ? 2 : 1;
        if (!digit(*s))
            return fail(p, "a bad exponent");
        while (digit(*s))
            s++;
    }
    v->is_integer = integer && !negative;
    v->integer = v->is_integer ? value : 0;
    p->at = s;
    return 1;
}

static struct json *value(struct parser *p, int depth);

/* The elements of an array or the members of an object, after the opening bracket. */
static int members(struct parser *p, struct json *v, int depth, int object)
{
    char close = object ? '}' : ']';
    struct json **tail = &v->child;
    skip_space(p);
    if (*p->at == close) {
        p->at++;
        return 1;
    }
    for (;;) {
        const char *key = NULL;
        if (object) {
            skip_space(p);
            if (*p->at != '"')
                return fail(p, "an object key that is not a string");
            key = string(p);
            skip_space(p);
            if (!key || *p->at != ':')
                return fail(p, "a missing ':' after an object key");
            p->at++;
            for (struct json *m = v->child; m; m = m->next)
                if (strcmp(m->key, key) == 0)
                    return fail(p, "a duplicate object key");
        }
        struct json *item = value(p, depth + 1);
        if (!item)
            return 0;
        item->key = key;
        *tail = item;
        tail = &item->next;
        skip_space(p);
        if (*p->at == close) {
            p->at++;
            return 1;
        }
        if (*p->at++ != ',')
            return fail(p, object ? "a missing ',' or '}'" : "a missing ',' or ']'");
    }
}

static struct json *value(struct parser *p, int depth)
{
    skip_space(p);
    if (depth > JSON_DEPTH) {
        fail(p, "nesting deeper than 32 levels");
        return NULL;
    }
    struct json *v = NULL;
    char c = *p->at;
    if (c == '{' || c == '[') {
        p->at++;
        if ((v = node(p, c == '{' ? JSON_OBJECT : JSON_ARRAY)))
            members(p, v, depth, c == '{');
    } else if (c == '"') {
        if ((v = node(p, JSON_STRING)))
            v->string = string(p);
    } else if (c == '-' || digit(c)) {
        if ((v = node(p, JSON_NUMBER)))
            number(p, v);
    } else {
        static const char *const words[] = {"null", "false", "true"};
        for (int i = 0; i < 3 && !v; i++)
            if (strncmp(p->at, words[i], strlen(words[i])) == 0 &&
                (v = node(p, (enum json_type)(JSON_NULL + i))))
                p->at += strlen(words[i]);
        if (!v)
            fail(p, "not a JSON value");
    }
    if (p->failed && v) {
        json_free(v);
        return NULL;
    }
    return v;
}

struct json *json_parse(char *text, char error[160])
{
    struct parser p = {text, error, 0};
    struct json *v = value(&p, 0);
    skip_space(&p);
    if (v && *p.at != '\0') {
        fail(&p, "text after the JSON value");
        json_free(v);
        v = NULL;
    }
    return v;
}

void json_free(struct json *v)
{
    while (v) {
        struct json *next = v->next;
        json_free(v->child);
        free(v);
        v = next;
    }
}

const struct json *json_get(const struct json *object, const char *key)
{
    if (!object || object->type != JSON_OBJECT)
        return NULL;
    for (const struct json *m = object->child; m; m = m->next)
        if (strcmp(m->key, key) == 0)
            return m;
    return NULL;
}

const char *json_get_string(const struct json *object, const char *key)
{
    const struct json *v = json_get(object, key);
    return v && v->type == JSON_STRING ? v->string : NULL;
}

int json_get_u64(const struct json *object, const char *key, uint64_t *out)
{
    const struct json *v = json_get(object, key);
    if (!v || v->type != JSON_NUMBER || !v->is_integer)
        return -1;
    *out = v->integer;
    return 0;
}
