/* A null libcuda.so.1 for the overhead benchmark of `ghostvram track`: the allocation entry
 * points with the driver API's names and ABI (src/track/cuda_abi.h) that do nothing but bump a
 * pointer, so that what is measured is the tracker's own cost per call (its record, its
 * backtrace, its write) and not a driver's. Never installed. */
#include <stdatomic.h>

#include "track/cuda_abi.h"

#define EXPORT __attribute__((visibility("default")))

static atomic_ullong next = 0x7f0000000000ull;

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize);
CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
        *dptr = atomic_fetch_add(&next, (bytesize + 255) & ~(size_t)255);
        return CUDA_SUCCESS;
}

EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr);
CUresult cuMemFree_v2(CUdeviceptr dptr)
{
        (void)dptr;
        return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxGetDevice(CUdevice *device);
CUresult cuCtxGetDevice(CUdevice *device)
{
        *device = 0;
        return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev);
CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
        for (int i = 0; i < 16; i++)
                uuid->bytes[i] = (char)(i + dev);
        return CUDA_SUCCESS;
}
