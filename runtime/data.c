/* Data loading. The digest is checked on the exact bytes before any of them is interpreted, so
 * a run never trains on data other than what it was built for.
 *
 * CSV: every line that is not blank (empty, or spaces and tabs only) holds the features and
 * then the label (class kind: one integral class index in [0, outputs)) or the targets
 * (regression kind: `outputs` numbers), separated by commas; spaces and tabs around a field
 * and a trailing \r are allowed. Numbers are decimal
 * ([+-]digits[.digits][e[+-]digits]) and are parsed by musl's strtof, which rounds correctly,
 * so x86-64 and AArch64 read the same float32 values. */
#define _POSIX_C_SOURCE 200809L
#include "data.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "files.h"
#include "refusal.h"
#include "sha256.h"

struct bytes {
    char *data;
    size_t size;
};

/* The data file's bytes. Only a regular file is opened (O_NONBLOCK: a FIFO never holds the
 * open) and only one of the size the program was built against is read, so a FIFO, a device
 * such as /dev/zero or a larger file is refused before a byte of it is read. */
static struct bytes read_file(const struct alpha_program *p, const char *path)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT)
            refuse(REFUSAL_DATA_MISSING, "data file %s does not exist", path);
        refuse(REFUSAL_DATA_UNREADABLE, "cannot open data file %s: %s", path, strerror(errno));
    }
    struct stat st;
    if (fstat(fd, &st) != 0)
        refuse(REFUSAL_DATA_UNREADABLE, "cannot read data file %s: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode))
        refuse(REFUSAL_DATA_UNREADABLE, "data file %s is %s, not a regular file", path,
               files_kind(st.st_mode));
    uint64_t size = (uint64_t)st.st_size;
    if (p->data_size && size != p->data_size)
        refuse(REFUSAL_DATA_DIGEST_MISMATCH, "data file %s has %llu bytes, but the program was "
               "built for a file of %llu bytes (sha256 %s)", path, (unsigned long long)size,
               (unsigned long long)p->data_size, p->data_sha256);
    if (size >= SIZE_MAX)
        refuse(REFUSAL_OUT_OF_MEMORY, "cannot hold data file %s (%llu bytes)", path,
               (unsigned long long)size);
    struct bytes b = {malloc((size_t)size + 1), 0};
    if (!b.data)
        refuse(REFUSAL_OUT_OF_MEMORY, "cannot hold data file %s (%llu bytes)", path,
               (unsigned long long)size);
    /* Exactly the size seen: a file that grows meanwhile is not followed; one that shrank
     * ends early and fails its digest. */
    while (b.size < size) {
        ssize_t got = read(fd, b.data + b.size, (size_t)(size - b.size));
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            refuse(REFUSAL_DATA_UNREADABLE, "cannot read data file %s: %s", path,
                   strerror(errno));
        if (got == 0)
            break;
        b.size += (size_t)got;
    }
    close(fd);
    b.data[b.size] = '\0';
    return b;
}

static void check_digest(const char *what, const char *expected, const uint8_t digest[32])
{
    char actual[65];
    sha256_hex(digest, actual);
    if (strcmp(actual, expected) != 0)
        refuse(REFUSAL_DATA_DIGEST_MISMATCH,
               "data %s has sha256 %s, but the program was built for %s", what, actual,
               expected);
}

static int is_digit(char c) { return c >= '0' && c <= '9'; }

/* Accepts exactly the decimal grammar above; rejects inf, nan, hex floats and anything else
 * strtof would take. */
static int is_decimal(const char *s)
{
    int digits = 0;
    if (*s == '+' || *s == '-')
        s++;
    while (is_digit(*s))
        s++, digits++;
    if (*s == '.') {
        s++;
        while (is_digit(*s))
            s++, digits++;
    }
    if (digits == 0)
        return 0;
    if (*s == 'e' || *s == 'E') {
        s++;
        if (*s == '+' || *s == '-')
            s++;
        if (!is_digit(*s))
            return 0;
        while (is_digit(*s))
            s++;
    }
    return *s == '\0';
}

static int is_finite_float(float v)
{
    uint32_t bits;
    memcpy(&bits, &v, sizeof bits);
    return ((bits >> 23) & 0xff) != 0xff;
}

/* Parses one field (NUL-terminated, already trimmed) into *value. */
static int parse_number(const char *field, float *value)
{
    if (!is_decimal(field))
        return 0;
    *value = strtof(field, NULL);
    return is_finite_float(*value);
}

static int is_blank(char c) { return c == ' ' || c == '\t'; }

/* An empty line, or one of spaces and tabs only, holds no row (the checker's rule too). */
static int is_blank_line(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!is_blank(s[i]))
            return 0;
    return 1;
}

/* Splits line (modified in place) into exactly `want` numbers. Returns the number of fields
 * seen, or -1 (with *bad set to the 1-based field) when a field is not a number. */
static long parse_row(char *line, float *values, uint32_t want, uint32_t *bad)
{
    uint32_t count = 0;
    char *field = line;
    for (;;) {
        char *end = strchr(field, ',');
        if (end)
            *end = '\0';
        while (is_blank(*field))
            field++;
        size_t n = strlen(field);
        while (n > 0 && is_blank(field[n - 1]))
            field[--n] = '\0';
        if (count < want && !parse_number(field, &values[count])) {
            *bad = count + 1;
            return -1;
        }
        count++;
        if (!end)
            return count;
        field = end + 1;
    }
}

static int is_class_index(float label, uint32_t classes)
{
    return label >= 0.0f && label < (float)classes && label == (float)(int32_t)label;
}

static void load_csv(const struct alpha_program *p, const char *path, struct dataset *d)
{
    struct bytes file = read_file(p, path);
    struct sha256 s;
    uint8_t digest[32];
    sha256_init(&s);
    sha256_update(&s, file.data, file.size);
    sha256_final(&s, digest);
    char what[1100];
    snprintf(what, sizeof what, "file %s", path);
    check_digest(what, p->data_sha256, digest);

    int class_kind = p->label_kind == ALPHA_LABEL_CLASS;
    uint32_t columns = d->features + d->targets;
    float *x = checked_calloc((size_t)p->rows * d->features, sizeof(float), "data features");
    int32_t *labels =
        class_kind ? checked_calloc((size_t)p->rows * d->targets, sizeof(int32_t), "class labels")
                   : NULL;
    float *targets =
        class_kind ? NULL : checked_calloc((size_t)p->rows * d->targets, sizeof(float), "targets");
    float *row = checked_calloc(columns, sizeof(float), "a data row");
    uint32_t rows = 0;
    unsigned long line_number = 0;
    char *line = file.data;
    char *end = file.data + file.size;
    while (line < end) {
        char *newline = memchr(line, '\n', (size_t)(end - line));
        char *next = newline ? newline + 1 : end;
        size_t n = (size_t)((newline ? newline : end) - line);
        line[n] = '\0';
        line_number++;
        if (n > 0 && line[n - 1] == '\r')
            line[--n] = '\0';
        if (memchr(line, '\0', n))
            refuse(REFUSAL_DATA_MALFORMED, "%s line %lu: contains a NUL byte", path, line_number);
        if (is_blank_line(line, n)) {
            line = next;
            continue;
        }
        uint32_t bad = 0;
        long seen = parse_row(line, row, columns, &bad);
        if (seen < 0)
            refuse(REFUSAL_DATA_MALFORMED,
                   "%s line %lu: column %u is not a finite decimal number", path, line_number,
                   (unsigned)bad);
        if ((unsigned long)seen != columns)
            refuse(REFUSAL_DATA_MALFORMED,
                   "%s line %lu: %ld columns, expected %u (%u features + %u %s)", path,
                   line_number, seen, (unsigned)columns, (unsigned)d->features,
                   (unsigned)d->targets, class_kind ? "label" : "targets");
        if (rows == p->rows)
            refuse(REFUSAL_DATA_MALFORMED, "%s line %lu: more than the %u rows the program expects",
                   path, line_number, (unsigned)p->rows);
        for (uint32_t k = 0; p->vocabulary && k < d->features; k++)
            if (!is_class_index(row[k], p->vocabulary))
                refuse(REFUSAL_DATA_MALFORMED, "%s line %lu: column %u is not a token in 0..%u",
                       path, line_number, (unsigned)k + 1, (unsigned)p->vocabulary - 1);
        memcpy(x + (size_t)rows * d->features, row, d->features * sizeof(float));
        if (class_kind) {
            for (uint32_t k = 0; k < d->targets; k++) {
                float label = row[d->features + k];
                if (!is_class_index(label, p->outputs))
                    refuse(REFUSAL_DATA_MALFORMED,
                           "%s line %lu: label %.9g is not a class index in 0..%u", path,
                           line_number, (double)label, (unsigned)p->outputs - 1);
                labels[(size_t)rows * d->targets + k] = (int32_t)label; /* integral: exact */
            }
        } else {
            memcpy(targets + (size_t)rows * d->targets, row + d->features,
                   d->targets * sizeof(float));
        }
        rows++;
        line = next;
    }
    if (rows != p->rows)
        refuse(REFUSAL_DATA_MALFORMED, "%s has %u rows, the program expects %u", path,
               (unsigned)rows, (unsigned)p->rows);
    free(row);
    free(file.data);
    d->x = x;
    d->y_class = labels;
    d->y_reg = targets;
}

/* The embedded digest covers the little-endian bytes of embedded_x then embedded_y. */
static void hash_floats_le(struct sha256 *s, const float *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t bits;
        memcpy(&bits, &v[i], sizeof bits);
        uint8_t le[4] = {(uint8_t)bits, (uint8_t)(bits >> 8), (uint8_t)(bits >> 16),
                         (uint8_t)(bits >> 24)};
        sha256_update(s, le, 4);
    }
}

static void load_embedded(const struct alpha_program *p, struct dataset *d)
{
    struct sha256 s;
    uint8_t digest[32];
    sha256_init(&s);
    hash_floats_le(&s, p->embedded_x, (size_t)p->rows * d->features);
    hash_floats_le(&s, p->embedded_y, (size_t)p->rows * d->targets);
    sha256_final(&s, digest);
    check_digest("embedded in the executable", p->data_sha256, digest);
    d->x = p->embedded_x;
    if (p->label_kind != ALPHA_LABEL_CLASS) {
        d->y_reg = p->embedded_y;
        return;
    }
    size_t n = (size_t)p->rows * d->targets;
    int32_t *labels = checked_calloc(n, sizeof(int32_t), "class labels");
    for (size_t r = 0; r < n; r++) {
        float label = p->embedded_y[r];
        if (!is_class_index(label, p->outputs))
            refuse(REFUSAL_DATA_MALFORMED,
                   "embedded row %u: label %.9g is not a class index in 0..%u",
                   (unsigned)(r / d->targets), (double)label, (unsigned)p->outputs - 1);
        labels[r] = (int32_t)label;
    }
    d->y_class = labels;
}

void data_load(const struct alpha_program *p, const char *path, struct dataset *d)
{
    d->rows = p->rows;
    d->features = p->features;
    d->targets = p->label_kind != ALPHA_LABEL_CLASS ? p->outputs
                 : p->label_positions > 1                 ? p->label_positions
                                                          : 1;
    d->y_class = NULL;
    d->y_reg = NULL;
    if (p->data_kind == ALPHA_DATA_EMBEDDED)
        load_embedded(p, d);
    else
        load_csv(p, path ? path : p->data_path, d);
}
