/* NumPy arrays read in place: a .npy header (magic, version, the dictionary of 'descr',
 * 'fortran_order' and 'shape') and a .npz member found through its zip directory. The rules
 * and messages are alpha_core/data/arrays.py's, so `alpha check` refuses what the executable
 * would refuse, by the same name (data-bad-header, data-wrong-dtype, data-wrong-size,
 * data-key-missing, data-bad-archive). */
#ifndef ALPHA_ARRAYS_H
#define ALPHA_ARRAYS_H

#include <stddef.h>
#include <stdint.h>

#define NPY_MAX_AXES 32

struct npy {
    char descr[8];                 /* one of the accepted dtype strings, NUL-terminated */
    uint32_t itemsize;
    uint32_t ndim;
    uint64_t shape[NPY_MAX_AXES];
    uint64_t offset;               /* of the first element, from the start of the bytes read */
    uint64_t count;                /* elements: the product of the shape */
};

/* The header of the .npy bytes [buf, buf + size): one of `accepted` (NULL-terminated dtype
 * strings), holding exactly the bytes after its header. `where` names the file (and key) in
 * messages, `role` the array's part ("features", "labels", "targets"). Refuses by name. */
void npy_read(const uint8_t *buf, uint64_t size, const char *where, const char *const *accepted,
              const char *role, struct npy *out);

/* The shape as Python writes a tuple: "(1797, 64)", "(5,)". */
void npy_shape_text(const struct npy *a, char *out, size_t n);

/* Where array `key` (member KEY.npy, stored) of the .npz bytes lies. Refuses by name. */
void npz_member(const uint8_t *buf, uint64_t size, const char *key, const char *path,
                uint64_t *offset, uint64_t *length);

#endif
