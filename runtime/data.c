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
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "arrays.h"
#include "files.h"
#include "refusal.h"
#include "sha256.h"
#include "needed_rows.h"
#include "shared_rows.h"

struct bytes {
    char *data;
    size_t size;
};

/* Opens a data file for reading: only a regular file is opened (O_NONBLOCK: a FIFO never holds
 * the open), and only one of the size the program was built against (`expected`; 0: any), so a
 * FIFO, a device such as /dev/zero or a larger file is refused before a byte of it is read. */
static int open_data(const char *path, uint64_t expected, const char *sha256, uint64_t *size)
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
    *size = (uint64_t)st.st_size;
    if (expected && *size != expected)
        refuse(REFUSAL_DATA_DIGEST_MISMATCH, "data file %s has %llu bytes, but the program was "
               "built for a file of %llu bytes (sha256 %s)", path, (unsigned long long)*size,
               (unsigned long long)expected, sha256);
    if (*size >= SIZE_MAX)
        refuse(REFUSAL_OUT_OF_MEMORY, "cannot hold data file %s (%llu bytes)", path,
               (unsigned long long)*size);
    return fd;
}

/* The data file's bytes, read whole (the CSV parser writes into them). */
static struct bytes read_file(const struct alpha_program *p, const char *path)
{
    uint64_t size;
    int fd = open_data(path, p->data_size, p->data_sha256, &size);
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
int data_is_decimal(const char *s)
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

int data_is_finite(float v)
{
    uint32_t bits;
    memcpy(&bits, &v, sizeof bits);
    return ((bits >> 23) & 0xff) != 0xff;
}

/* Parses one field (NUL-terminated, already trimmed) into *value. */
static int parse_number(const char *field, float *value)
{
    if (!data_is_decimal(field))
        return 0;
    *value = strtof(field, NULL);
    return data_is_finite(*value);
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

#define HEADER_HINT " (a header line? give the table `header: true`)"

/* A table's header line (no NUL, not blank): `columns` names, the label column's among them
 * when the program names it (data-bad-header). */
static void check_header(const struct alpha_program *p, const struct dataset *d, const char *path,
                         unsigned long line_number, char *line, uint32_t columns, uint32_t lo)
{
    uint32_t count = 0;
    char *label = NULL;
    for (char *field = line;; count++) {
        char *end = strchr(field, ',');
        if (end)
            *end = '\0';
        while (is_blank(*field))
            field++;
        size_t n = strlen(field);
        while (n > 0 && is_blank(field[n - 1]))
            field[--n] = '\0';
        if (count == lo)
            label = field;
        if (!end)
            break;
        field = end + 1;
    }
    count++;
    if (count != columns)
        refuse(REFUSAL_DATA_BAD_HEADER,
               "%s line %lu: the header has %u columns, expected %u (%u features + %u %s)", path,
               line_number, (unsigned)count, (unsigned)columns, (unsigned)d->features,
               (unsigned)d->targets, p->label_kind == ALPHA_LABEL_CLASS ? "label" : "targets");
    if (p->label_name && label && strcmp(label, p->label_name) != 0)
        refuse(REFUSAL_DATA_BAD_HEADER,
               "%s line %lu: header column %u is `%s`, not the label column `%s`", path,
               line_number, (unsigned)lo + 1, label, p->label_name);
}

struct mapped {
    const uint8_t *data;
    uint64_t size;
};

/* The file mapped read-only, its size and SHA-256 checked before a byte of it is interpreted. */
static struct mapped map_file(const char *path, uint64_t expected, const char *sha256)
{
    struct mapped m = {NULL, 0};
    int fd = open_data(path, expected, sha256, &m.size);
    static const uint8_t empty[1];
    m.data = empty;
    if (m.size) {
        void *at = mmap(NULL, (size_t)m.size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (at == MAP_FAILED)
            refuse(REFUSAL_DATA_UNREADABLE, "cannot map data file %s: %s", path,
                   strerror(errno));
        m.data = at;
    }
    close(fd);
    struct sha256 s;
    uint8_t digest[32];
    sha256_init(&s);
    sha256_update(&s, m.data, (size_t)m.size);
    sha256_final(&s, digest);
    char what[1100];
    snprintf(what, sizeof what, "file %s", path);
    check_digest(what, sha256, digest);
    return m;
}

static void unmap(struct mapped m)
{
    if (m.size)
        munmap((void *)(uintptr_t)m.data, (size_t)m.size);
}

static void load_csv(const struct alpha_program *p, const char *path, struct dataset *d)
{
    if (shared_rows_offered()) {
        /* the file mapped to check its digest (its pages are the page cache's, shared), and
         * the rows another role of the launch parsed from it mapped instead of parsing it */
        struct mapped m = map_file(path, p->data_size, p->data_sha256);
        int found = shared_rows_find(p, d);
        unmap(m);
        if (found) {
            d->shared = 1;
            return;
        }
    }
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
    /* rows shared with the launch's other roles are parsed whole (they may read any of them);
     * otherwise a role of a plan parses the training rows its leaves read, and the held out */
    uint8_t *needed = shared_rows_offered() ? NULL : needed_rows(p, alpha_role());
    uint32_t train_rows = p->rows - p->holdout;
    float *x = checked_calloc((size_t)p->rows * d->features, sizeof(float), "data features");
    int32_t *labels =
        class_kind ? checked_calloc((size_t)p->rows * d->targets, sizeof(int32_t), "class labels")
                   : NULL;
    float *targets =
        class_kind ? NULL : checked_calloc((size_t)p->rows * d->targets, sizeof(float), "targets");
    float *row = checked_calloc(columns, sizeof(float), "a data row");
    /* the label columns [lo, lo + targets); the features are the others, in order */
    uint32_t lo = p->label_column ? p->label_column - 1 : d->features;
    if (lo > d->features)
        refuse(REFUSAL_PROGRAM_INVALID, "label column %u of a table of %u columns",
               (unsigned)p->label_column, (unsigned)columns);
    int first = 1; /* the first line that is not blank: the header, or a row that may be one */
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
        if (first && p->csv_header) {
            first = 0;
            check_header(p, d, path, line_number, line, columns, lo);
            line = next;
            continue;
        }
        if (needed && rows < train_rows && !needed[rows]) { /* never read by this role */
            first = 0;
            rows++;
            line = next;
            continue;
        }
        d->parsed++;
        uint32_t bad = 0;
        long seen = parse_row(line, row, columns, &bad);
        if (seen < 0)
            refuse(REFUSAL_DATA_MALFORMED,
                   "%s line %lu: column %u is not a finite decimal number%s", path, line_number,
                   (unsigned)bad, first ? HEADER_HINT : "");
        first = 0;
        if ((unsigned long)seen != columns)
            refuse(REFUSAL_DATA_MALFORMED,
                   "%s line %lu: %ld columns, expected %u (%u features + %u %s)", path,
                   line_number, seen, (unsigned)columns, (unsigned)d->features,
                   (unsigned)d->targets, class_kind ? "label" : "targets");
        if (rows == p->rows)
            refuse(REFUSAL_DATA_MALFORMED, "%s line %lu: more than the %u rows the program expects",
                   path, line_number, (unsigned)p->rows);
        float *features = x + (size_t)rows * d->features;
        for (uint32_t c = 0, f = 0; c < columns; c++) {
            if (c == lo)
                c += d->targets;
            if (c >= columns)
                break;
            if (p->vocabulary && !is_class_index(row[c], p->vocabulary))
                refuse(REFUSAL_DATA_MALFORMED, "%s line %lu: column %u is not a token in 0..%u",
                       path, line_number, (unsigned)c + 1, (unsigned)p->vocabulary - 1);
            features[f++] = row[c];
        }
        if (class_kind) {
            for (uint32_t k = 0; k < d->targets; k++) {
                float label = row[lo + k];
                if (!is_class_index(label, p->outputs))
                    refuse(REFUSAL_DATA_MALFORMED,
                           "%s line %lu: label %.9g is not a class index in 0..%u", path,
                           line_number, (double)label, (unsigned)p->outputs - 1);
                labels[(size_t)rows * d->targets + k] = (int32_t)label; /* integral: exact */
            }
        } else {
            memcpy(targets + (size_t)rows * d->targets, row + lo, d->targets * sizeof(float));
        }
        rows++;
        line = next;
    }
    if (rows != p->rows)
        refuse(REFUSAL_DATA_MALFORMED, "%s has %u rows, the program expects %u", path,
               (unsigned)rows, (unsigned)p->rows);
    free(row);
    free(needed);
    free(file.data);
    d->x = x;
    d->y_class = labels;
    d->y_reg = targets;
    if (!needed) /* whole rows only: another role may read any of them */
        shared_rows_offer(p, d); /* to the launch's other roles on this host, with a folder */
}

/* ---- binary files: NumPy arrays and tokens, mapped (never parsed as text) ---- */

/* Element i of an array of dtype `descr` at `at` (unaligned: a .npz member lies anywhere), as
 * a float (int32 rounded to nearest, as NumPy's astype(float32)). */
static float element_float(const uint8_t *at, const char *descr, uint64_t i)
{
    if (descr[1] == 'u' && descr[2] == '1')
        return (float)at[i];
    if (descr[1] == 'u') {
        uint16_t v;
        memcpy(&v, at + 2 * i, 2);
        return (float)v;
    }
    if (descr[1] == 'i') {
        int32_t v;
        memcpy(&v, at + 4 * i, 4);
        return (float)v;
    }
    float v;
    memcpy(&v, at + 4 * i, 4);
    return v;
}

static const char *const FEATURE_DTYPES[] = {"<f4", "|u1", "<u2", "<i4", NULL};
static const char *const CLASS_DTYPES[] = {"|u1", "<u2", "<i4", "<i8", "<f4", NULL};
static const char *const TARGET_DTYPES[] = {"<f4", NULL};

/* A label of an integer dtype, exactly (uint8 and uint16 are exact as floats). */
static int64_t label_int(const uint8_t *at, const char *descr, uint64_t i)
{
    if (descr[2] == '8') {
        int64_t v;
        memcpy(&v, at + 8 * i, 8);
        return v;
    }
    if (descr[1] == 'i') {
        int32_t v;
        memcpy(&v, at + 4 * i, 4);
        return v;
    }
    return (int64_t)element_float(at, descr, i);
}

/* NPY (two files) and NPZ (two members of one archive): headers, shapes, then values, in the
 * order of alpha_core/data/arrays.py. */
static void load_arrays(const struct alpha_program *p, const char *path, struct dataset *d)
{
    struct mapped xf = map_file(path, p->data_size, p->data_sha256), yf = xf;
    const uint8_t *xb = xf.data, *yb;
    uint64_t xs = xf.size, ys;
    char xwhere[1200], ywhere[1200];
    if (p->data_format == ALPHA_FORMAT_NPY) {
        if (!p->labels_path || !p->labels_sha256)
            refuse(REFUSAL_PROGRAM_INVALID, "an npy data set without its labels file");
        yf = map_file(p->labels_path, p->labels_size, p->labels_sha256);
        yb = yf.data;
        ys = yf.size;
        snprintf(xwhere, sizeof xwhere, "%s", path);
        snprintf(ywhere, sizeof ywhere, "%s", p->labels_path);
    } else {
        if (!p->x_key || !p->y_key)
            refuse(REFUSAL_PROGRAM_INVALID, "an npz data set without its array names");
        uint64_t xo, yo;
        npz_member(xf.data, xf.size, p->x_key, path, &xo, &xs);
        npz_member(xf.data, xf.size, p->y_key, path, &yo, &ys);
        xb = xf.data + xo;
        yb = xf.data + yo;
        snprintf(xwhere, sizeof xwhere, "%s array `%s`", path, p->x_key);
        snprintf(ywhere, sizeof ywhere, "%s array `%s`", path, p->y_key);
    }
    int class_kind = p->label_kind == ALPHA_LABEL_CLASS;
    const char *role = class_kind ? "labels" : "targets";
    struct npy x, y;
    npy_read(xb, xs, xwhere, FEATURE_DTYPES, "features", &x);
    npy_read(yb, ys, ywhere, class_kind ? CLASS_DTYPES : TARGET_DTYPES, role, &y);
    char shape[640];
    npy_shape_text(&x, shape, sizeof shape);
    if (x.ndim < 2)
        refuse(REFUSAL_DATA_WRONG_SHAPE, "%s: features of shape %s; they need at least 2 axes "
               "(rows, features…)", xwhere, shape);
    uint64_t rows = x.shape[0], features = rows ? x.count / rows : 0;
    if (rows == 0 || x.count == 0)
        refuse(REFUSAL_DATA_WRONG_SHAPE, "%s: features of shape %s hold no %s", xwhere, shape,
               rows == 0 ? "rows" : "features");
    npy_shape_text(&y, shape, sizeof shape);
    if (y.ndim != 1 && y.ndim != 2)
        refuse(REFUSAL_DATA_WRONG_SHAPE, "%s: %s of shape %s; they are (rows,) or (rows, n)",
               ywhere, role, shape);
    if (y.shape[0] != rows)
        refuse(REFUSAL_DATA_WRONG_SHAPE, "%s: %llu rows of %s, but %llu rows of features",
               ywhere, (unsigned long long)y.shape[0], role, (unsigned long long)rows);
    uint64_t per_row = y.ndim == 1 ? 1 : y.shape[1];
    if (per_row == 0 || (class_kind && per_row > 65536))
        refuse(REFUSAL_DATA_WRONG_SHAPE, "%s: %llu %s per row; 1 to 65,536 fit", ywhere,
               (unsigned long long)per_row, role);
    if (!class_kind && per_row != p->outputs)
        refuse(REFUSAL_DATA_WRONG_SHAPE, "%s: %llu targets per row, but the data item declares "
               "`targets: %u`", ywhere, (unsigned long long)per_row, (unsigned)p->outputs);
    if (rows != p->rows || features != d->features || per_row != d->targets)
        refuse(REFUSAL_DATA_WRONG_SHAPE, "%s: %llu rows of %llu features and %llu %s, but the "
               "program expects %u rows of %u and %u", xwhere, (unsigned long long)rows,
               (unsigned long long)features, (unsigned long long)per_row, role,
               (unsigned)p->rows, (unsigned)d->features, (unsigned)d->targets);

    const uint8_t *xv = xb + x.offset, *yv = yb + y.offset;
    size_t n = (size_t)rows * d->features;
    float *xs_out = checked_calloc(n, sizeof(float), "data features");
    for (size_t i = 0; i < n; i++)
        xs_out[i] = element_float(xv, x.descr, i);
    if (x.descr[1] == 'f')
        for (size_t i = 0; i < n; i++)
            if (!data_is_finite(xs_out[i]))
                refuse(REFUSAL_DATA_MALFORMED, "%s: row %llu feature %llu is not a finite number",
                       xwhere, (unsigned long long)(i / d->features),
                       (unsigned long long)(i % d->features));
    for (size_t i = 0; p->vocabulary && i < n; i++)
        if (!is_class_index(xs_out[i], p->vocabulary))
            refuse(REFUSAL_DATA_MALFORMED, "%s: row %llu feature %llu is not a token in 0..%u",
                   xwhere, (unsigned long long)(i / d->features),
                   (unsigned long long)(i % d->features), (unsigned)p->vocabulary - 1);
    size_t m = (size_t)rows * d->targets;
    d->x = xs_out;
    if (!class_kind) {
        float *t = checked_calloc(m, sizeof(float), "targets");
        for (size_t i = 0; i < m; i++) {
            t[i] = element_float(yv, y.descr, i);
            if (!data_is_finite(t[i]))
                refuse(REFUSAL_DATA_MALFORMED, "%s: row %llu target %llu is not a finite number",
                       ywhere, (unsigned long long)(i / d->targets),
                       (unsigned long long)(i % d->targets));
        }
        d->y_reg = t;
    } else {
        int32_t *labels = checked_calloc(m, sizeof(int32_t), "class labels");
        for (size_t i = 0; i < m; i++) {
            unsigned long long r = i / d->targets;
            if (y.descr[1] == 'f') {
                float v = element_float(yv, y.descr, i);
                if (!is_class_index(v, p->outputs))
                    refuse(REFUSAL_DATA_MALFORMED,
                           "%s: row %llu label %.9g is not a class index in 0..%u", ywhere, r,
                           (double)v, (unsigned)p->outputs - 1);
                labels[i] = (int32_t)v;
            } else {
                int64_t v = label_int(yv, y.descr, i);
                if (v < 0 || v >= (int64_t)p->outputs)
                    refuse(REFUSAL_DATA_MALFORMED,
                           "%s: row %llu label %lld is not a class index in 0..%u", ywhere, r,
                           (long long)v, (unsigned)p->outputs - 1);
                labels[i] = (int32_t)v;
            }
        }
        d->y_class = labels;
    }
    if (p->data_format == ALPHA_FORMAT_NPY)
        unmap(yf);
    unmap(xf);
}

/* A flat file of tokens (nanoGPT's train.bin): row i reads tokens i*L … i*L+L-1 and predicts
 * tokens i*L+1 … i*L+L, L = features; the tokens after the last whole window are not read. */
static void load_tokens(const struct alpha_program *p, const char *path, struct dataset *d)
{
    struct mapped f = map_file(path, p->data_size, p->data_sha256);
    uint32_t width = p->token_bytes;
    if ((width != 2 && width != 4) || !p->vocabulary || d->targets != d->features)
        refuse(REFUSAL_PROGRAM_INVALID, "a token data set of %u-byte tokens, vocabulary %u, "
               "%u features and %u labels", (unsigned)width, (unsigned)p->vocabulary,
               (unsigned)d->features, (unsigned)d->targets);
    if (f.size % width)
        refuse(REFUSAL_DATA_WRONG_SIZE, "%s: %llu bytes is not a whole number of uint%u tokens "
               "(%u bytes each)", path, (unsigned long long)f.size, (unsigned)(8 * width),
               (unsigned)width);
    uint64_t n = f.size / width, L = d->features;
    if (n < L + 1)
        refuse(REFUSAL_DATA_WRONG_SHAPE, "%s: %llu tokens; a window of length %llu needs %llu",
               path, (unsigned long long)n, (unsigned long long)L, (unsigned long long)(L + 1));
    uint64_t rows = (n - 1) / L, used = rows * L + 1;
    uint32_t *t = checked_calloc((size_t)used, sizeof(uint32_t), "tokens");
    for (uint64_t i = 0; i < used; i++) {
        if (width == 2) {
            uint16_t v;
            memcpy(&v, f.data + 2 * i, 2);
            t[i] = v;
        } else {
            memcpy(&t[i], f.data + 4 * i, 4);
        }
        if (t[i] >= p->vocabulary)
            refuse(REFUSAL_DATA_MALFORMED, "%s: token %llu is %u, not a token in 0..%u", path,
                   (unsigned long long)i, (unsigned)t[i], (unsigned)p->vocabulary - 1);
    }
    if (rows != p->rows)
        refuse(REFUSAL_DATA_WRONG_SHAPE, "%s: %llu windows of %llu tokens, but the program "
               "expects %u", path, (unsigned long long)rows, (unsigned long long)L,
               (unsigned)p->rows);
    float *x = checked_calloc((size_t)(rows * L), sizeof(float), "data features");
    int32_t *labels = checked_calloc((size_t)(rows * L), sizeof(int32_t), "class labels");
    for (uint64_t i = 0; i < rows * L; i++) {
        x[i] = (float)t[i]; /* below 2^24: exact */
        labels[i] = (int32_t)t[i + 1];
    }
    free(t);
    unmap(f);
    d->x = x;
    d->y_class = labels;
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
    d->parsed = 0;
    d->shared = 0;
    const char *file = path ? path : p->data_path;
    if (p->data_kind == ALPHA_DATA_EMBEDDED)
        load_embedded(p, d);
    else if (p->data_format == ALPHA_FORMAT_NPY || p->data_format == ALPHA_FORMAT_NPZ)
        load_arrays(p, file, d);
    else if (p->data_format == ALPHA_FORMAT_TOKENS)
        load_tokens(p, file, d);
    else if (p->data_format == ALPHA_FORMAT_CSV)
        load_csv(p, file, d);
    else
        refuse(REFUSAL_PROGRAM_INVALID, "data format %u", (unsigned)p->data_format);
}
