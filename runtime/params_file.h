/* The parameter file: n_params little-endian float32 values, published atomically. */
#ifndef ALPHA_PARAMS_FILE_H
#define ALPHA_PARAMS_FILE_H

#include <stdint.h>

/* Writes path.tmp, fsyncs it, renames it over path and fsyncs the folder. Refuses with
 * params-write-failed (leaving no temporary file behind). hex gets the file's SHA-256. */
void params_write(const char *path, const float *params, uint64_t n, char hex[65]);

#endif
