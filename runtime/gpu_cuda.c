/* gpu.h for the NVIDIA driver: libcuda.so.1 opened with dlopen, its entry points found with
 * dlsym, and nothing else from CUDA (no headers, no toolkit, no runtime library). The few
 * types, enums and signatures it needs are declared below from the driver API's reference;
 * their values are the driver's ABI and never change between driver versions.
 *
 * Linked only into GPU roles, which are glibc-dynamic (x86_64-linux-gnu.2.28, -ldl): a static
 * musl executable cannot dlopen. Every call comes from the thread that called alpha_gpu_open,
 * the one its context is current on. */
#define _POSIX_C_SOURCE 200809L /* dlopen, dlsym, dlerror */
#include "gpu.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "refusal.h"

/* ---- the driver's ABI (CUDA driver API reference, cuda.h) -------------------------------- */

typedef int CUresult; /* CUDA_SUCCESS is 0 */
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct cu_opaque *CUcontext;
typedef struct cu_opaque *CUmodule;
typedef struct cu_opaque *CUfunction;
typedef struct cu_opaque *CUevent;
typedef struct cu_opaque *CUstream; /* NULL: the context's legacy default stream */
typedef struct {
    unsigned char bytes[16];
} CUuuid;

enum {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_NO_DEVICE = 100,
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
    CU_JIT_INFO_LOG_BUFFER = 3,
    CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4,
    CU_JIT_ERROR_LOG_BUFFER = 5,
    CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
    CU_EVENT_DEFAULT = 0,
    CU_CTX_SCHED_AUTO = 0,
};

struct driver {
    CUresult (*cuInit)(unsigned int flags);
    CUresult (*cuGetErrorName)(CUresult error, const char **name);
    CUresult (*cuDeviceGetCount)(int *count);
    CUresult (*cuDeviceGet)(CUdevice *device, int ordinal);
    CUresult (*cuDeviceGetName)(char *name, int len, CUdevice dev);
    CUresult (*cuDeviceGetUuid)(CUuuid *uuid, CUdevice dev);
    CUresult (*cuDeviceTotalMem)(size_t *bytes, CUdevice dev);
    CUresult (*cuDeviceGetAttribute)(int *value, int attribute, CUdevice dev);
    CUresult (*cuCtxCreate)(CUcontext *ctx, unsigned int flags, CUdevice dev);
    CUresult (*cuCtxSynchronize)(void);
    CUresult (*cuMemGetInfo)(size_t *free_bytes, size_t *total_bytes);
    CUresult (*cuMemAlloc)(CUdeviceptr *dptr, size_t bytes);
    CUresult (*cuMemcpyHtoD)(CUdeviceptr dst, const void *src, size_t bytes);
    CUresult (*cuMemcpyDtoH)(void *dst, CUdeviceptr src, size_t bytes);
    CUresult (*cuMemcpyDtoD)(CUdeviceptr dst, CUdeviceptr src, size_t bytes);
    CUresult (*cuModuleLoadDataEx)(CUmodule *module, const void *image, unsigned int n_options,
                                   int *options, void **values);
    CUresult (*cuModuleGetFunction)(CUfunction *f, CUmodule module, const char *name);
    CUresult (*cuLaunchKernel)(CUfunction f, unsigned int grid_x, unsigned int grid_y,
                               unsigned int grid_z, unsigned int block_x, unsigned int block_y,
                               unsigned int block_z, unsigned int shared_bytes, CUstream stream,
                               void **params, void **extra);
    CUresult (*cuEventCreate)(CUevent *event, unsigned int flags);
    CUresult (*cuEventRecord)(CUevent event, CUstream stream);
    CUresult (*cuEventElapsedTime)(float *ms, CUevent start, CUevent end);
};

static struct driver cu;
static CUmodule module;
static CUfunction *kernels;
static const char *const *kernel_names;
static uint32_t n_kernels;

/* One pair of events around each launch since the last sync: their elapsed times summed are
 * the time spent in kernels, without the host's gaps between launches. */
struct timed_launch {
    CUevent start, end;
    uint32_t kernel;
};
static struct timed_launch *launches;
static uint32_t n_launches, cap_launches;
/* Each kernel's time (the event pairs' milliseconds, summed) and launches; kernel_us is
 * filled from kernel_ms when asked for (alpha_gpu_kernel_us). */
static double *kernel_ms;
static uint64_t *kernel_us, *kernel_launches;

/* ---- helpers ------------------------------------------------------------------------------ */

/* The driver's own name for an error, e.g. "CUDA_ERROR_OUT_OF_MEMORY"; its number when the
 * driver has no name for it. Returns a static buffer for numbers: use it before the next call. */
static const char *error_name(CUresult r)
{
    static char number[32];
    const char *name = NULL;
    if (cu.cuGetErrorName && cu.cuGetErrorName(r, &name) == CUDA_SUCCESS && name)
        return name;
    snprintf(number, sizeof number, "CUDA error %d", r);
    return number;
}

/* A size as a message says it: "1.5 GiB", "640.0 KiB", "12 bytes". */
static const char *human(uint64_t bytes, char *buf, size_t size)
{
    static const char *const units[] = {"KiB", "MiB", "GiB", "TiB"};
    if (bytes < 1024) {
        snprintf(buf, size, "%llu bytes", (unsigned long long)bytes);
        return buf;
    }
    double v = (double)bytes / 1024.0;
    unsigned u = 0;
    while (v >= 1024.0 && u + 1 < sizeof units / sizeof units[0]) {
        v /= 1024.0;
        u++;
    }
    snprintf(buf, size, "%.1f %s", v, units[u]);
    return buf;
}

/* nvidia-smi's spelling: GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx, lowercase hex. */
static void format_uuid(const CUuuid *u, char *out, size_t size)
{
    const unsigned char *b = u->bytes;
    snprintf(out, size,
             "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
             b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
             b[14], b[15]);
}

static int lower(int c) { return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c; }

/* Whether `asked` names `uuid` ("GPU-..."): case-insensitive, with or without "GPU-". */
static int uuid_matches(const char *asked, const char *uuid)
{
    const char *a = asked, *u = uuid;
    if (lower(a[0]) != 'g' || lower(a[1]) != 'p' || lower(a[2]) != 'u' || a[3] != '-')
        u += 4; /* asked without the prefix */
    for (; *a && *u; a++, u++)
        if (lower((unsigned char)*a) != lower((unsigned char)*u))
            return 0;
    return *a == '\0' && *u == '\0';
}

/* dlsym of a required entry point; a driver without it is too old to run a GPU role. */
static void *entry(void *lib, const char *name)
{
    void *p = dlsym(lib, name);
    if (!p)
        refuse(REFUSAL_GPU_DRIVER_MISSING, "libcuda.so.1 has no %s: the NVIDIA driver is too old", name);
    return p;
}

/* The first of two names the driver exports (a _v2 entry point, else the original). */
static void *entry_either(void *lib, const char *preferred, const char *fallback)
{
    void *p = dlsym(lib, preferred);
    return p ? p : entry(lib, fallback);
}

static void open_driver(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *why = dlerror();
        refuse(REFUSAL_GPU_DRIVER_MISSING,
               "cannot load the NVIDIA driver (libcuda.so.1): %s; a GPU role needs the NVIDIA "
               "kernel driver and nothing else from CUDA",
               why ? why : "no reason given");
    }
    /* Function pointers from dlsym's void *: POSIX guarantees the conversion works. */
    cu.cuGetErrorName = (CUresult(*)(CUresult, const char **))entry(lib, "cuGetErrorName");
    cu.cuInit = (CUresult(*)(unsigned int))entry(lib, "cuInit");
    cu.cuDeviceGetCount = (CUresult(*)(int *))entry(lib, "cuDeviceGetCount");
    cu.cuDeviceGet = (CUresult(*)(CUdevice *, int))entry(lib, "cuDeviceGet");
    cu.cuDeviceGetName = (CUresult(*)(char *, int, CUdevice))entry(lib, "cuDeviceGetName");
    cu.cuDeviceGetUuid = (CUresult(*)(CUuuid *, CUdevice))entry_either(
        lib, "cuDeviceGetUuid_v2", "cuDeviceGetUuid");
    cu.cuDeviceTotalMem = (CUresult(*)(size_t *, CUdevice))entry(lib, "cuDeviceTotalMem_v2");
    cu.cuDeviceGetAttribute =
        (CUresult(*)(int *, int, CUdevice))entry(lib, "cuDeviceGetAttribute");
    cu.cuCtxCreate = (CUresult(*)(CUcontext *, unsigned int, CUdevice))entry(lib, "cuCtxCreate_v2");
    cu.cuCtxSynchronize = (CUresult(*)(void))entry(lib, "cuCtxSynchronize");
    cu.cuMemGetInfo = (CUresult(*)(size_t *, size_t *))entry(lib, "cuMemGetInfo_v2");
    cu.cuMemAlloc = (CUresult(*)(CUdeviceptr *, size_t))entry(lib, "cuMemAlloc_v2");
    cu.cuMemcpyHtoD =
        (CUresult(*)(CUdeviceptr, const void *, size_t))entry(lib, "cuMemcpyHtoD_v2");
    cu.cuMemcpyDtoH = (CUresult(*)(void *, CUdeviceptr, size_t))entry(lib, "cuMemcpyDtoH_v2");
    cu.cuMemcpyDtoD =
        (CUresult(*)(CUdeviceptr, CUdeviceptr, size_t))entry(lib, "cuMemcpyDtoD_v2");
    cu.cuModuleLoadDataEx = (CUresult(*)(CUmodule *, const void *, unsigned int, int *,
                                         void **))entry(lib, "cuModuleLoadDataEx");
    cu.cuModuleGetFunction =
        (CUresult(*)(CUfunction *, CUmodule, const char *))entry(lib, "cuModuleGetFunction");
    cu.cuLaunchKernel = (CUresult(*)(CUfunction, unsigned int, unsigned int, unsigned int,
                                     unsigned int, unsigned int, unsigned int, unsigned int,
                                     CUstream, void **, void **))entry(lib, "cuLaunchKernel");
    cu.cuEventCreate = (CUresult(*)(CUevent *, unsigned int))entry(lib, "cuEventCreate");
    cu.cuEventRecord = (CUresult(*)(CUevent, CUstream))entry(lib, "cuEventRecord");
    cu.cuEventElapsedTime =
        (CUresult(*)(float *, CUevent, CUevent))entry(lib, "cuEventElapsedTime");
}

/* ---- gpu.h -------------------------------------------------------------------------------- */

void alpha_gpu_open(const char *uuid, uint32_t index, struct alpha_gpu_device *dev)
{
    open_driver();
    CUresult r = cu.cuInit(0);
    int count = 0;
    if (r == CUDA_ERROR_NO_DEVICE)
        count = 0; /* the driver works and sees no device: not found, below */
    else if (r != CUDA_SUCCESS)
        refuse(REFUSAL_GPU_DRIVER_MISSING, "the NVIDIA driver did not initialise: cuInit failed with %s",
               error_name(r));
    else if ((r = cu.cuDeviceGetCount(&count)) != CUDA_SUCCESS)
        refuse(REFUSAL_GPU_DRIVER_MISSING, "the NVIDIA driver cannot count its devices: %s",
               error_name(r));

    /* Every device's UUID, to find the one asked for and to list them all when it is not. */
    char present[640] = "";
    size_t used = 0;
    int chosen = -1;
    CUdevice device = 0;
    for (int i = 0; i < count; i++) {
        CUdevice d;
        CUuuid u;
        char text[48];
        if ((r = cu.cuDeviceGet(&d, i)) != CUDA_SUCCESS ||
            (r = cu.cuDeviceGetUuid(&u, d)) != CUDA_SUCCESS)
            refuse(REFUSAL_GPU_DRIVER_MISSING, "the NVIDIA driver cannot describe device %d: %s", i,
                   error_name(r));
        format_uuid(&u, text, sizeof text);
        if (used < sizeof present)
            used += (size_t)snprintf(present + used, sizeof present - used, "%s%d %s",
                                     i ? ", " : "", i, text);
        int wanted = uuid && *uuid ? uuid_matches(uuid, text) : (uint32_t)i == index;
        if (wanted && chosen < 0) {
            chosen = i;
            device = d;
            memcpy(dev->uuid, text, sizeof text);
        }
    }
    if (chosen < 0) {
        char asked[96];
        if (uuid && *uuid)
            snprintf(asked, sizeof asked, "no GPU has UUID %.60s", uuid);
        else
            snprintf(asked, sizeof asked, "no GPU at index %u", (unsigned)index);
        if (!count)
            refuse(REFUSAL_GPU_NOT_FOUND, "%s: the driver sees no device", asked);
        refuse(REFUSAL_GPU_NOT_FOUND, "%s; the driver sees %d: %s", asked, count, present);
    }

    dev->ordinal = chosen;
    dev->shadow = 0;
    size_t total = 0;
    if ((r = cu.cuDeviceGetName(dev->name, (int)sizeof dev->name, device)) != CUDA_SUCCESS ||
        (r = cu.cuDeviceTotalMem(&total, device)) != CUDA_SUCCESS ||
        (r = cu.cuDeviceGetAttribute(&dev->cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                                     device)) != CUDA_SUCCESS ||
        (r = cu.cuDeviceGetAttribute(&dev->cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                                     device)) != CUDA_SUCCESS)
        refuse(REFUSAL_GPU_DRIVER_MISSING, "the NVIDIA driver cannot describe %s: %s", dev->uuid,
               error_name(r));
    dev->name[sizeof dev->name - 1] = '\0';

    CUcontext ctx;
    if ((r = cu.cuCtxCreate(&ctx, CU_CTX_SCHED_AUTO, device)) != CUDA_SUCCESS)
        refuse(REFUSAL_GPU_DRIVER_MISSING, "cannot create a context on %s (%s): %s", dev->name,
               dev->uuid, error_name(r));
    /* Free memory once the context exists: the context's own memory is no longer free. */
    size_t free_bytes = 0, total_bytes = 0;
    if ((r = cu.cuMemGetInfo(&free_bytes, &total_bytes)) != CUDA_SUCCESS)
        refuse(REFUSAL_GPU_DRIVER_MISSING, "cannot read the free memory of %s (%s): %s", dev->name,
               dev->uuid, error_name(r));
    dev->total_bytes = total;
    dev->free_bytes = free_bytes;
}

void alpha_gpu_admit(const struct alpha_gpu_device *dev, uint64_t demand, const char *breakdown)
{
    if (demand <= dev->free_bytes)
        return;
    char need[32], free_text[32], total_text[32];
    refuse(REFUSAL_MEMORY_ADMISSION,
           "the role needs %llu bytes (%s) of device memory and %s (%s) has %llu free (%s of "
           "%s): %s",
           (unsigned long long)demand, human(demand, need, sizeof need), dev->name, dev->uuid,
           (unsigned long long)dev->free_bytes, human(dev->free_bytes, free_text, sizeof free_text),
           human(dev->total_bytes, total_text, sizeof total_text),
           breakdown && *breakdown ? breakdown : "no breakdown given");
}

void alpha_gpu_load(const char *ptx, uint32_t n, const char *const *names)
{
    /* The JIT writes its logs NUL-terminated into these buffers; the sizes go by value in the
     * option's pointer-sized slot, as the driver API defines these options. */
    static char error_log[16384], info_log[16384];
    int options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                     CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES};
    void *values[] = {error_log, (void *)(uintptr_t)sizeof error_log, info_log,
                      (void *)(uintptr_t)sizeof info_log};
    error_log[0] = info_log[0] = '\0';
    CUresult r = cu.cuModuleLoadDataEx(&module, ptx, 4, options, values);
    if (r != CUDA_SUCCESS) {
        error_log[sizeof error_log - 1] = info_log[sizeof info_log - 1] = '\0';
        /* The whole logs on stderr; the refusal's message holds as much as fits. */
        if (info_log[0])
            fprintf(stderr, "the driver's JIT info log:\n%s\n", info_log);
        if (error_log[0])
            fprintf(stderr, "the driver's JIT log:\n%s\n", error_log);
        refuse(REFUSAL_GPU_JIT_FAILED, "the driver's JIT could not compile the role's PTX (%s): %s",
               error_name(r), error_log[0] ? error_log : "the JIT wrote no log");
    }
    kernels = checked_calloc(n, sizeof *kernels, "the GPU kernels");
    kernel_ms = checked_calloc(n, sizeof *kernel_ms, "the GPU kernels' times");
    kernel_us = checked_calloc(n, sizeof *kernel_us, "the GPU kernels' times");
    kernel_launches = checked_calloc(n, sizeof *kernel_launches, "the GPU kernels' launches");
    kernel_names = names;
    n_kernels = n;
    for (uint32_t k = 0; k < n; k++)
        if ((r = cu.cuModuleGetFunction(&kernels[k], module, names[k])) != CUDA_SUCCESS)
            refuse(REFUSAL_GPU_JIT_FAILED, "the role's PTX has no kernel %s (%s)", names[k],
                   error_name(r));
}

uint64_t alpha_gpu_alloc(uint64_t bytes, const char *what)
{
    CUdeviceptr p = 0;
    /* A zero-byte buffer is legal in a program and not in the driver: give it one byte. */
    CUresult r = cu.cuMemAlloc(&p, bytes ? (size_t)bytes : 1);
    if (r != CUDA_SUCCESS)
        refuse(REFUSAL_OUT_OF_MEMORY, "cannot allocate %llu bytes of device memory for %s: %s",
               (unsigned long long)bytes, what, error_name(r));
    return (uint64_t)p;
}

/* A copy that fails after launches names them: a kernel's fault shows at the next operation
 * that waits for it. */
static _Noreturn void copy_failed(const char *what, uint64_t bytes, CUresult r)
{
    if (n_launches)
        refuse(REFUSAL_GPU_LAUNCH_FAILED, "%s of %llu bytes failed with %s after kernel %s", what,
               (unsigned long long)bytes, error_name(r),
               kernel_names[launches[n_launches - 1].kernel]);
    refuse(REFUSAL_GPU_LAUNCH_FAILED, "%s of %llu bytes failed with %s", what,
           (unsigned long long)bytes, error_name(r));
}

void alpha_gpu_upload(uint64_t dst, const void *src, uint64_t bytes)
{
    CUresult r;
    if (bytes && (r = cu.cuMemcpyHtoD((CUdeviceptr)dst, src, (size_t)bytes)) != CUDA_SUCCESS)
        copy_failed("a copy to the device", bytes, r);
}

void alpha_gpu_download(void *dst, uint64_t src, uint64_t bytes)
{
    CUresult r;
    if (bytes && (r = cu.cuMemcpyDtoH(dst, (CUdeviceptr)src, (size_t)bytes)) != CUDA_SUCCESS)
        copy_failed("a copy from the device", bytes, r);
}

void alpha_gpu_copy(uint64_t dst, uint64_t src, uint64_t bytes)
{
    CUresult r;
    if (bytes &&
        (r = cu.cuMemcpyDtoD((CUdeviceptr)dst, (CUdeviceptr)src, (size_t)bytes)) != CUDA_SUCCESS)
        copy_failed("a copy within the device", bytes, r);
}

void alpha_gpu_launch(uint32_t k, uint64_t args, uint64_t threads)
{
    if (k >= n_kernels)
        refuse(REFUSAL_GPU_LAUNCH_FAILED, "kernel %u launched, and the role loaded %u kernels",
               (unsigned)k, (unsigned)n_kernels);
    if (threads == 0)
        return; /* no output to compute; the driver refuses an empty grid */
    uint64_t blocks = (threads + ALPHA_GPU_BLOCK - 1) / ALPHA_GPU_BLOCK;
    if (blocks > 0x7fffffffu)
        refuse(REFUSAL_GPU_LAUNCH_FAILED, "kernel %s needs %llu blocks of %u threads, more than a grid "
               "holds (2^31 - 1)", kernel_names[k], (unsigned long long)blocks, ALPHA_GPU_BLOCK);

    uint32_t made = cap_launches;
    launches = checked_grow(launches, n_launches, &cap_launches, sizeof *launches, 64,
                            "the GPU launch timings");
    if (cap_launches > made) /* new slots have no events yet */
        memset(&launches[made], 0, (size_t)(cap_launches - made) * sizeof *launches);
    struct timed_launch *t = &launches[n_launches];
    CUresult r;
    /* Events are made once and reused: slots below cap_launches made earlier keep theirs. */
    if (!t->start && ((r = cu.cuEventCreate(&t->start, CU_EVENT_DEFAULT)) != CUDA_SUCCESS ||
                      (r = cu.cuEventCreate(&t->end, CU_EVENT_DEFAULT)) != CUDA_SUCCESS))
        refuse(REFUSAL_GPU_LAUNCH_FAILED, "cannot create the timing events of kernel %s: %s",
               kernel_names[k], error_name(r));
    t->kernel = k;

    void *params[] = {&args, &threads};
    if ((r = cu.cuEventRecord(t->start, NULL)) != CUDA_SUCCESS ||
        (r = cu.cuLaunchKernel(kernels[k], (unsigned int)blocks, 1, 1, ALPHA_GPU_BLOCK, 1, 1, 0,
                               NULL, params, NULL)) != CUDA_SUCCESS ||
        (r = cu.cuEventRecord(t->end, NULL)) != CUDA_SUCCESS)
        refuse(REFUSAL_GPU_LAUNCH_FAILED, "kernel %s over %llu threads failed with %s", kernel_names[k],
               (unsigned long long)threads, error_name(r));
    n_launches++;
}

uint64_t alpha_gpu_sync(void)
{
    CUresult r = cu.cuCtxSynchronize();
    if (r != CUDA_SUCCESS) {
        if (n_launches)
            refuse(REFUSAL_GPU_LAUNCH_FAILED, "kernel %s (the last of %u since the previous wait) "
                   "failed with %s", kernel_names[launches[n_launches - 1].kernel],
                   (unsigned)n_launches, error_name(r));
        refuse(REFUSAL_GPU_LAUNCH_FAILED, "waiting for the device failed with %s", error_name(r));
    }
    double ms = 0.0;
    for (uint32_t i = 0; i < n_launches; i++) {
        float one = 0.0f;
        if ((r = cu.cuEventElapsedTime(&one, launches[i].start, launches[i].end)) != CUDA_SUCCESS)
            refuse(REFUSAL_GPU_LAUNCH_FAILED, "cannot time kernel %s: %s",
                   kernel_names[launches[i].kernel], error_name(r));
        ms += (double)one;
        uint32_t k = launches[i].kernel;
        kernel_ms[k] += (double)one;
        kernel_launches[k]++;
    }
    n_launches = 0;
    return (uint64_t)(ms * 1000.0 + 0.5);
}

const uint64_t *alpha_gpu_kernel_us(void)
{
    for (uint32_t k = 0; kernel_us && k < n_kernels; k++)
        kernel_us[k] = (uint64_t)(kernel_ms[k] * 1000.0 + 0.5);
    return kernel_us;
}

const uint64_t *alpha_gpu_kernel_launches(void)
{
    return kernel_launches;
}
