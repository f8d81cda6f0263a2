/* The parameter file: n_params little-endian float32 values, published atomically. */
#ifndef ALPHA_PARAMS_FILE_H
#define ALPHA_PARAMS_FILE_H

#include <stdint.h>

/* Makes path's folder when missing (mkdir -p), writes path.tmp, fsyncs it, renames it over
 * path and fsyncs the folder. Refuses with params-write-failed (leaving no temporary file
 * behind). hex gets the file's SHA-256. */
void params_write(const char *path, const float *params, uint64_t n, char hex[65]);
/* Start-up, before round 0: refuses params-write-failed unless path (and path.tmp) is absent or
 * a regular file (never a device, FIFO, folder or link) and its folder, or the nearest one
 * above it that exists (the rest is made when the file is written), can take a new file (an
 * unnamed O_TMPFILE probe: nothing is created that a refused run leaves behind). */
void params_check(const char *path);

#endif
