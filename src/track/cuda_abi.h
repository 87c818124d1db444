/* cuda_abi.h: the few CUDA driver API types and prototypes that ghostvram's allocation tracker
 * (preload/), the simulated libcuda.so.1 (sim/cuda/) and the simulated CUDA application use,
 * declared by the project itself so that nothing needs cuda.h to build.
 *
 * Each declaration is typed exactly as the CUDA Driver API reference (CUDA 12.x, "Modules":
 * Data types used by CUDA driver, Memory Management, Virtual Memory Management, Stream Ordered
 * Memory Allocator, Driver Entry Point Access) documents it, and as cuda.h lays it out on a
 * 64-bit Linux host. Sizes are checked with static assertions below. */
#pragma once
#include <assert.h>
#include <stddef.h>
#include <stdint.h>

/* "typedef enum cudaError_enum { ... } CUresult;" — an enum: 4 bytes. */
typedef int CUresult;
enum {
        CUDA_SUCCESS = 0,
        CUDA_ERROR_INVALID_VALUE = 1,
        CUDA_ERROR_OUT_OF_MEMORY = 2,
        CUDA_ERROR_NOT_INITIALIZED = 3,
        CUDA_ERROR_NO_DEVICE = 100,
        CUDA_ERROR_INVALID_DEVICE = 101,
        CUDA_ERROR_INVALID_CONTEXT = 201,
        CUDA_ERROR_OPERATING_SYSTEM = 304,
        CUDA_ERROR_NOT_FOUND = 500,
        CUDA_ERROR_NOT_SUPPORTED = 801,
        CUDA_ERROR_UNKNOWN = 999,
};

/* "typedef unsigned long long CUdeviceptr_v2;" (CUdeviceptr on 64-bit builds, since 3.2) */
typedef unsigned long long CUdeviceptr;
/* "typedef int CUdevice_v1; typedef CUdevice_v1 CUdevice;" */
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;             /* opaque handles */
typedef struct CUstream_st *CUstream;
typedef struct CUmemPoolHandle_st *CUmemoryPool;
/* "typedef unsigned long long CUmemGenericAllocationHandle_v1;" */
typedef unsigned long long CUmemGenericAllocationHandle;
/* "typedef uint64_t cuuint64_t;" */
typedef uint64_t cuuint64_t;
/* "typedef struct CUuuid_st { char bytes[16]; } CUuuid;" */
typedef struct CUuuid_st {
        char bytes[16];
} CUuuid;

/* CUmemAllocationProp (cuMemCreate): type, requested handle types, location {type, id},
 * win32HandleMetaData, allocFlags {compressionType, gpuDirectRDMACapable, usage, reserved[4]}. */
typedef struct CUmemLocation_st {
        int type;                               /* CUmemLocationType: 1 = CU_MEM_LOCATION_TYPE_DEVICE */
        int id;                                 /* the device ordinal for a device location */
} CUmemLocation;
typedef struct CUmemAllocationProp_st {
        int type;                               /* CUmemAllocationType: 1 = PINNED */
        int requestedHandleTypes;               /* CUmemAllocationHandleType */
        CUmemLocation location;
        void *win32HandleMetaData;
        struct {
                unsigned char compressionType;
                unsigned char gpuDirectRDMACapable;
                unsigned short usage;
                unsigned char reserved[4];
        } allocFlags;
} CUmemAllocationProp;
#define CU_MEM_LOCATION_TYPE_DEVICE 1
#define CU_MEM_ALLOCATION_TYPE_PINNED 1

/* cuGetProcAddress flags ("CUdriverProcAddress_flags"). */
#define CU_GET_PROC_ADDRESS_DEFAULT 0
#define CU_GET_PROC_ADDRESS_LEGACY_STREAM 1
#define CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM 2
/* "typedef enum CUdriverProcAddressQueryResult_enum" (cuGetProcAddress_v2's symbolStatus) */
typedef int CUdriverProcAddressQueryResult;
#define CU_GET_PROC_ADDRESS_SUCCESS 0
#define CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND 1
#define CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT 2

static_assert(sizeof(CUdeviceptr) == 8, "CUdeviceptr is 64-bit on 64-bit hosts");
static_assert(sizeof(CUuuid) == 16, "CUuuid is 16 bytes");
static_assert(sizeof(CUmemAllocationProp) == 32, "CUmemAllocationProp as cuda.h lays it out on LP64");

/* The entry points, as documented (the exported symbol names; cuda.h maps the unversioned
 * names to these with #defines). */
typedef CUresult (*cu_init_fn)(unsigned int Flags);
typedef CUresult (*cu_mem_alloc_fn)(CUdeviceptr *dptr, size_t bytesize);                  /* cuMemAlloc_v2 */
typedef CUresult (*cu_mem_alloc_pitch_fn)(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes, size_t Height,
                                          unsigned int ElementSizeBytes);                    /* cuMemAllocPitch_v2 */
typedef CUresult (*cu_mem_alloc_managed_fn)(CUdeviceptr *dptr, size_t bytesize, unsigned int flags);
typedef CUresult (*cu_mem_alloc_async_fn)(CUdeviceptr *dptr, size_t bytesize, CUstream hStream);
typedef CUresult (*cu_mem_alloc_from_pool_async_fn)(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                                    CUstream hStream);
typedef CUresult (*cu_mem_free_fn)(CUdeviceptr dptr);                                        /* cuMemFree_v2 */
typedef CUresult (*cu_mem_free_async_fn)(CUdeviceptr dptr, CUstream hStream);
typedef CUresult (*cu_mem_create_fn)(CUmemGenericAllocationHandle *handle, size_t size,
                                     const CUmemAllocationProp *prop, unsigned long long flags);
typedef CUresult (*cu_mem_release_fn)(CUmemGenericAllocationHandle handle);
typedef CUresult (*cu_mem_map_fn)(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                                  unsigned long long flags);
typedef CUresult (*cu_mem_unmap_fn)(CUdeviceptr ptr, size_t size);
typedef CUresult (*cu_ctx_get_device_fn)(CUdevice *device);
typedef CUresult (*cu_device_get_uuid_fn)(CUuuid *uuid, CUdevice dev);                      /* and _v2 */
/* "CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)"
 * (CUDA 11.3; the only form before 12.0) */
typedef CUresult (*cu_get_proc_address_fn)(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags);
/* "CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
 *  CUdriverProcAddressQueryResult *symbolStatus)" (CUDA 12.0+; cuda.h maps cuGetProcAddress to it) */
typedef CUresult (*cu_get_proc_address_v2_fn)(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                                              CUdriverProcAddressQueryResult *symbolStatus);
