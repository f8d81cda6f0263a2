/* Named refusals. A refusal prints one `refused` event on stdout and `error[NAME]: message` on
 * stderr, then exits; nothing is written after it (in particular no parameter file).
 * docs/runtime.md lists every name below; a test keeps the two in step. */
#ifndef ALPHA_REFUSAL_H
#define ALPHA_REFUSAL_H

#include <stddef.h>
#include <stdint.h>

#define ALPHA_EXIT_USAGE 2
#define ALPHA_EXIT_REFUSED 3

#define REFUSAL_USAGE "usage"                         /* bad command line (exit 2) */
#define REFUSAL_PROGRAM_INVALID "program-invalid"     /* ALPHA_PROGRAM contradicts itself */
#define REFUSAL_DATA_MISSING "data-missing"           /* the data file does not exist */
#define REFUSAL_DATA_UNREADABLE "data-unreadable"     /* it exists but cannot be read */
#define REFUSAL_DATA_DIGEST_MISMATCH "data-digest-mismatch"
#define REFUSAL_DATA_MALFORMED "data-malformed"       /* bad row, column count, label, row count */
#define REFUSAL_DATA_BAD_HEADER "data-bad-header"     /* .npy header, CSV header line */
#define REFUSAL_DATA_WRONG_DTYPE "data-wrong-dtype"   /* an array's element type */
#define REFUSAL_DATA_WRONG_SHAPE "data-wrong-shape"   /* arrays that do not fit together */
#define REFUSAL_DATA_WRONG_SIZE "data-wrong-size"     /* bytes disagreeing with the header */
#define REFUSAL_DATA_KEY_MISSING "data-key-missing"   /* no such array in the .npz */
#define REFUSAL_DATA_BAD_ARCHIVE "data-bad-archive"   /* a .npz that is not a stored zip */
#define REFUSAL_OUT_OF_MEMORY "out-of-memory"
#define REFUSAL_PARAMS_WRITE_FAILED "params-write-failed"
#define REFUSAL_EVENTS_UNWRITABLE "events-unwritable" /* stdout failed; after the parameters */
#define REFUSAL_THREADS_UNAVAILABLE "threads-unavailable" /* a worker thread could not start */
#define REFUSAL_THREADS_OVER_CORES "threads-over-cores" /* more threads than the pairing's cores */
/* Between roles (net.c, frame.c). */
#define REFUSAL_LISTEN_FAILED "listen-failed"         /* cannot listen on listen_host:port */
#define REFUSAL_PEER_UNREACHABLE "peer-unreachable"   /* a peer never connected or accepted */
#define REFUSAL_PEER_UNRESOLVABLE "peer-unresolvable" /* a peer's host name never resolved */
#define REFUSAL_PEER_TIMEOUT "peer-timeout"           /* a frame did not arrive in time */
#define REFUSAL_PEER_LOST "peer-lost"                 /* a peer closed or reset its connection */
#define REFUSAL_FRAME_CORRUPT "frame-corrupt"         /* bad magic, checksum or reserved field */
#define REFUSAL_FRAME_VERSION_MISMATCH "frame-version-mismatch"
#define REFUSAL_FRAME_OVERSIZE "frame-oversize"       /* longer than the program allows */
#define REFUSAL_FRAME_UNEXPECTED "frame-unexpected"   /* not the sender/round/node expected */
#define REFUSAL_PLAN_IDENTITY_MISMATCH "plan-identity-mismatch"
#define REFUSAL_ROLE_IDENTITY_MISMATCH "role-identity-mismatch"
#define REFUSAL_MEMBERSHIP_EPOCH_MISMATCH "membership-epoch-mismatch"
#define REFUSAL_PEER_UNAUTHENTICATED "peer-unauthenticated" /* a handshake proof did not verify */
#define REFUSAL_FRAME_FORGED "frame-forged"           /* a frame's MAC did not verify */
/* The launch secret (secret.c). */
#define REFUSAL_SECRET_MISSING "secret-missing"       /* a role with links and no secret */
#define REFUSAL_SECRET_UNREADABLE "secret-unreadable" /* not 32 bytes, not private, unreadable */
/* Checkpoints (checkpoint.c, resume.c). */
#define REFUSAL_CHECKPOINT_WRITE_FAILED "checkpoint-write-failed" /* a pack, folder or publication */
#define REFUSAL_CHECKPOINT_INCOMPLETE "checkpoint-incomplete" /* missing, unpublished, gaps */
#define REFUSAL_CHECKPOINT_MALFORMED "checkpoint-malformed"   /* not a manifest this reads */
#define REFUSAL_CHECKPOINT_IDENTITY_MISMATCH "checkpoint-identity-mismatch"
#define REFUSAL_ARITHMETIC_MISMATCH "arithmetic-mismatch" /* a capture of the other arithmetic */
#define REFUSAL_CHECKPOINT_DIGEST_MISMATCH "checkpoint-digest-mismatch"
#define REFUSAL_CHECKPOINT_FOLDER_FOREIGN "checkpoint-folder-foreign" /* not this system's */
/* GPU roles (gpu_cuda.c: the NVIDIA driver, opened with dlopen). */
#define REFUSAL_GPU_DRIVER_MISSING "gpu-driver-missing" /* no libcuda.so.1, or cuInit failed */
#define REFUSAL_GPU_NOT_FOUND "gpu-not-found"         /* no device of that UUID or index */
#define REFUSAL_GPU_JIT_FAILED "gpu-jit-failed"       /* the driver's JIT refused the PTX */
#define REFUSAL_GPU_LAUNCH_FAILED "gpu-launch-failed" /* a kernel launch or the device failed */
#define REFUSAL_MEMORY_ADMISSION "memory-admission"   /* the device has too little free memory */
/* Predictions (predict.c). */
#define REFUSAL_PREDICT_UNREADABLE "predict-input-unreadable" /* inputs or output unusable */
#define REFUSAL_PREDICT_MALFORMED "predict-input-malformed"   /* not rows of the features */
#define REFUSAL_PARAMS_FILE_MISMATCH "params-file-mismatch"   /* --params not this system's */
/* The kernels' CPU level (cpu_level.c). */
#define REFUSAL_CPU_LEVEL "cpu-level-unsupported" /* ALPHA_CPU_LEVEL names a level not here */

/* What every refused event names besides the refusal: the role and the round (1-based, as in
 * step events; 0 before and after the rounds, printed as null). */
void refusal_context(const char *role, uint32_t round);

/* Exits with ALPHA_EXIT_USAGE for REFUSAL_USAGE and ALPHA_EXIT_REFUSED otherwise. */
_Noreturn void refuse(const char *name, const char *format, ...)
    __attribute__((format(printf, 2, 3)));

/* malloc/calloc that refuse with out-of-memory instead of returning NULL. */
void *checked_calloc(size_t count, size_t size, const char *what);
/* Room for one more item in a growing array of items of `size` bytes holding n of *cap:
 * the array itself when n < *cap, else the array reallocated to twice the capacity (`first`
 * when empty), *cap updated. Refuses with out-of-memory naming `what`. */
void *checked_grow(void *items, uint32_t n, uint32_t *cap, size_t size, uint32_t first,
                   const char *what);

#endif
