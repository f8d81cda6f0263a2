/* Predictions (predict.h). The input's numbers are read by the data's rules (a decimal field,
 * finite as a float32, musl's correctly rounded strtof), so a row of a training CSV without its
 * label gives the same floats here. */
#define _POSIX_C_SOURCE 200809L
#include "predict.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data.h"
#include "files.h"
#include "refusal.h"

/* A little-endian target is assumed for .npy and .params, as for every file the runtime writes
 * (both targets, x86-64 and AArch64, are little-endian). */

struct bytes {
    char *data;
    uint64_t size;
};

static struct bytes read_whole(const char *path, const char *refusal, const char *what)
{
    char why[96];
    uint64_t size = 0;
    int fd = files_open_regular(path, why, &size);
    if (fd < 0)
        refuse(refusal, "cannot read %s %s: %s", what, path, why);
    struct bytes b = {checked_calloc((size_t)size + 1, 1, what), 0};
    while (b.size < size) {
        ssize_t got = read(fd, b.data + b.size, (size_t)(size - b.size));
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            refuse(refusal, "cannot read %s %s: %s", what, path, strerror(errno));
        if (got == 0)
            break;
        b.size += (uint64_t)got;
    }
    close(fd);
    b.data[b.size] = '\0';
    return b;
}

void predict_read_params(const struct alpha_program *p, const char *path, float *params)
{
    struct bytes b = read_whole(path, REFUSAL_PARAMS_FILE_MISMATCH, "parameter file");
    if (b.size != p->n_params * sizeof(float))
        refuse(REFUSAL_PARAMS_FILE_MISMATCH, "parameter file %s has %llu bytes; system %s has "
               "%llu parameters (%llu bytes of float32)", path, (unsigned long long)b.size,
               p->system, (unsigned long long)p->n_params,
               (unsigned long long)(p->n_params * sizeof(float)));
    memcpy(params, b.data, (size_t)b.size);
    free(b.data);
}

static int is_digit(char c) { return c >= '0' && c <= '9'; }
static int is_blank(char c) { return c == ' ' || c == '\t'; }

/* The rows of a CSV text: every line not blank holds exactly `features` numbers. */
static float *csv_rows(const char *path, char *text, uint64_t size, uint32_t features,
                       uint32_t *rows)
{
    uint32_t n = 0;
    uint64_t cap = 0;
    float *x = NULL;
    char *line = text, *end = text + size;
    for (uint32_t lineno = 1; line < end; lineno++) {
        char *nl = memchr(line, '\n', (size_t)(end - line));
        char *stop = nl ? nl : end;
        if (stop > line && stop[-1] == '\r')
            stop--;
        *stop = '\0';
        if (memchr(line, '\0', (size_t)(stop - line)))
            refuse(REFUSAL_PREDICT_MALFORMED, "%s line %u: contains a NUL byte (a .npy file "
                   "must be named *.npy)", path, (unsigned)lineno);
        char *s = line;
        while (is_blank(*s))
            s++;
        if (*s) {
            if ((uint64_t)(n + 1) * features > cap) {
                cap = cap ? 2 * cap : (uint64_t)1024 * features;
                x = realloc(x, (size_t)cap * sizeof(float));
                if (!x)
                    refuse(REFUSAL_OUT_OF_MEMORY, "cannot hold the rows of %s", path);
            }
            uint32_t column = 0;
            char *field = line;
            for (;;) {
                char *comma = strchr(field, ',');
                if (comma)
                    *comma = '\0';
                char *a = field, *b = field + strlen(field);
                while (is_blank(*a))
                    a++;
                while (b > a && is_blank(b[-1]))
                    *--b = '\0';
                column++;
                if (column <= features) {
                    float v = 0;
                    if (!data_is_decimal(a) || !data_is_finite(v = strtof(a, NULL)))
                        refuse(REFUSAL_PREDICT_MALFORMED, "%s line %u: column %u is not a "
                               "finite decimal number (as a float32): '%.40s'", path,
                               (unsigned)lineno, (unsigned)column, a);
                    x[(size_t)n * features + column - 1] = v;
                }
                if (!comma)
                    break;
                field = comma + 1;
            }
            if (column != features)
                refuse(REFUSAL_PREDICT_MALFORMED, "%s line %u: %u columns, expected %u (the "
                       "features of system %s; no label)", path, (unsigned)lineno,
                       (unsigned)column, (unsigned)features, ALPHA_PROGRAM.system);
            if (n == UINT32_MAX)
                refuse(REFUSAL_PREDICT_MALFORMED, "%s: more than %u rows", path,
                       (unsigned)UINT32_MAX);
            n++;
        }
        line = nl ? nl + 1 : end;
    }
    *rows = n;
    return x;
}

/* The rows of a .npy file: '<f4', C order, shape (rows, features) or (features,). */
static float *npy_rows(const char *path, const char *data, uint64_t size, uint32_t features,
                       uint32_t *rows)
{
    if (size < 10 || memcmp(data, "\x93NUMPY", 6) != 0)
        refuse(REFUSAL_PREDICT_MALFORMED, "%s is not a .npy file (no \\x93NUMPY magic)", path);
    uint8_t major = (uint8_t)data[6];
    uint64_t header_len, start;
    if (major == 1) {
        header_len = (uint8_t)data[8] | (uint64_t)(uint8_t)data[9] << 8;
        start = 10;
    } else if ((major == 2 || major == 3) && size >= 12) {
        header_len = (uint8_t)data[8] | (uint64_t)(uint8_t)data[9] << 8 |
                     (uint64_t)(uint8_t)data[10] << 16 | (uint64_t)(uint8_t)data[11] << 24;
        start = 12;
    } else {
        refuse(REFUSAL_PREDICT_MALFORMED, "%s: .npy version %u is not one this reads", path,
               (unsigned)major);
    }
    if (header_len > size - start || header_len > 65536)
        refuse(REFUSAL_PREDICT_MALFORMED, "%s: its .npy header runs past the file", path);
    char header[65537];
    memcpy(header, data + start, (size_t)header_len);
    header[header_len] = '\0';
    const char *descr = strstr(header, "'descr':");
    const char *order = strstr(header, "'fortran_order':");
    const char *shape = strstr(header, "'shape':");
    if (!descr || !order || !shape)
        refuse(REFUSAL_PREDICT_MALFORMED, "%s: its .npy header lacks descr, fortran_order or "
               "shape", path);
    descr += 8;
    while (is_blank(*descr))
        descr++;
    if (strncmp(descr, "'<f4'", 5) != 0)
        refuse(REFUSAL_PREDICT_MALFORMED, "%s holds %.8s values; the inputs must be float32 "
               "('<f4': NumPy's a.astype(np.float32))", path, descr);
    order += 16;
    while (is_blank(*order))
        order++;
    if (strncmp(order, "False", 5) != 0)
        refuse(REFUSAL_PREDICT_MALFORMED, "%s is in Fortran order; save it in C order "
               "(np.ascontiguousarray)", path);
    shape += 8;
    while (is_blank(*shape))
        shape++;
    unsigned long long dims[3];
    int n = 0;
    if (*shape != '(')
        refuse(REFUSAL_PREDICT_MALFORMED, "%s: its .npy shape is not a tuple", path);
    shape++;
    for (;;) {
        while (is_blank(*shape) || *shape == ',')
            shape++;
        if (*shape == ')')
            break;
        if (!is_digit(*shape) || n == 3)
            refuse(REFUSAL_PREDICT_MALFORMED, "%s: its .npy shape is not (rows, %u) or (%u,)",
                   path, (unsigned)features, (unsigned)features);
        dims[n++] = strtoull(shape, (char **)&shape, 10);
    }
    uint64_t count, width;
    if (n == 1)
        count = 1, width = dims[0];
    else if (n == 2)
        count = dims[0], width = dims[1];
    else
        refuse(REFUSAL_PREDICT_MALFORMED, "%s has %d dimensions; the inputs are (rows, %u) or "
               "(%u,)", path, n, (unsigned)features, (unsigned)features);
    if (width != features)
        refuse(REFUSAL_PREDICT_MALFORMED, "%s has rows of %llu values, expected %u (the "
               "features of system %s)", path, (unsigned long long)width, (unsigned)features,
               ALPHA_PROGRAM.system);
    if (count > UINT32_MAX)
        refuse(REFUSAL_PREDICT_MALFORMED, "%s: more than %u rows", path, (unsigned)UINT32_MAX);
    uint64_t body = start + header_len;
    if (size - body != count * width * sizeof(float))
        refuse(REFUSAL_PREDICT_MALFORMED, "%s holds %llu bytes of values; shape (%llu, %llu) "
               "needs %llu", path, (unsigned long long)(size - body), (unsigned long long)count,
               (unsigned long long)width, (unsigned long long)(count * width * sizeof(float)));
    float *x = checked_calloc((size_t)(count * width) + 1, sizeof(float), "prediction inputs");
    memcpy(x, data + body, (size_t)(count * width * sizeof(float)));
    for (uint64_t i = 0; i < count * width; i++)
        if (!data_is_finite(x[i]))
            refuse(REFUSAL_PREDICT_MALFORMED, "%s: row %llu, column %llu is not finite", path,
                   (unsigned long long)(i / width), (unsigned long long)(i % width + 1));
    *rows = (uint32_t)count;
    return x;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* The outputs as a .npy or CSV file's bytes. */
static char *encode(const char *out, const float *y, uint32_t rows, uint32_t per_row,
                    uint64_t *size)
{
    if (ends_with(out, ".npy")) {
        char dict[128];
        int len = snprintf(dict, sizeof dict,
                           "{'descr': '<f4', 'fortran_order': False, 'shape': (%u, %u), }",
                           (unsigned)rows, (unsigned)per_row);
        size_t header = 10 + (size_t)len + 1, padded = (header + 63) / 64 * 64;
        uint64_t body = (uint64_t)rows * per_row * sizeof(float);
        char *bytes = checked_calloc(padded + body + 1, 1, "prediction outputs");
        memcpy(bytes, "\x93NUMPY\x01\x00", 8);
        bytes[8] = (char)((padded - 10) & 0xff);
        bytes[9] = (char)((padded - 10) >> 8);
        memcpy(bytes + 10, dict, (size_t)len);
        memset(bytes + 10 + len, ' ', padded - 10 - (size_t)len - 1);
        bytes[padded - 1] = '\n';
        memcpy(bytes + padded, y, (size_t)body);
        *size = padded + body;
        return bytes;
    }
    size_t cap = (size_t)rows * per_row * 18 + 16, at = 0;
    char *text = checked_calloc(cap, 1, "prediction outputs");
    for (uint64_t r = 0; r < rows; r++)
        for (uint32_t k = 0; k < per_row; k++)
            at += (size_t)snprintf(text + at, cap - at, "%.9g%c",
                                   (double)y[r * per_row + k], k + 1 < per_row ? ',' : '\n');
    *size = at;
    return text;
}

uint32_t predict_file(const struct alpha_program *p, const float *params, const char *input,
                      const char *out, uint32_t *per_row)
{
    struct bytes b = read_whole(input, REFUSAL_PREDICT_UNREADABLE, "prediction inputs");
    uint32_t rows = 0;
    float *x = b.size >= 6 && memcmp(b.data, "\x93NUMPY", 6) == 0
                   ? npy_rows(input, b.data, b.size, p->features, &rows)
                   : ends_with(input, ".npy")
                         ? npy_rows(input, b.data, b.size, p->features, &rows)
                         : csv_rows(input, b.data, b.size, p->features, &rows);
    free(b.data);
    if (rows == 0)
        refuse(REFUSAL_PREDICT_MALFORMED, "%s holds no rows", input);
    uint32_t labels = p->label_kind == ALPHA_LABEL_CLASS && p->label_positions > 1
                          ? p->label_positions : 1;
    *per_row = labels * p->outputs;
    float *leaf_x = checked_calloc((size_t)p->leaf_size * p->features, sizeof(float),
                                   "prediction inputs");
    float *leaf_y = checked_calloc((size_t)p->leaf_size * *per_row, sizeof(float),
                                   "prediction outputs");
    float *y = checked_calloc((size_t)rows * *per_row, sizeof(float), "prediction outputs");
    for (uint32_t start = 0; start < rows; start += p->leaf_size) {
        uint32_t count = rows - start < p->leaf_size ? rows - start : p->leaf_size;
        memset(leaf_x, 0, (size_t)p->leaf_size * p->features * sizeof(float));
        memcpy(leaf_x, x + (size_t)start * p->features,
               (size_t)count * p->features * sizeof(float));
        alpha_forward(params, leaf_x, leaf_y);
        memcpy(y + (size_t)start * *per_row, leaf_y, (size_t)count * *per_row * sizeof(float));
    }
    uint64_t size = 0;
    char *bytes = encode(out, y, rows, *per_row, &size);
    const char *slash = strrchr(out, '/');
    if (slash && slash != out) {
        char folder[4096];
        snprintf(folder, sizeof folder, "%.*s", (int)(slash - out), out);
        if (files_mkdirs(folder) != 0)
            refuse(REFUSAL_PREDICT_UNREADABLE, "cannot make the folder of %s: %s", out,
                   strerror(errno));
    }
    if (files_write(out, bytes, size, NULL) != 0)
        refuse(REFUSAL_PREDICT_UNREADABLE, "cannot write predictions to %s: %s", out,
               strerror(errno));
    free(bytes);
    free(x);
    free(leaf_x);
    free(leaf_y);
    free(y);
    return rows;
}
