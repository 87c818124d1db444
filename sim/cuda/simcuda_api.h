/* simcuda_api.h: the simulated libcuda.so.1's own calls (not CUDA), for the simulator's
 * programs that link it. The CUDA part of its ABI is src/track/cuda_abi.h. */
#pragma once
#include "track/cuda_abi.h"

/* Prototypes of the driver entry points the simulator's programs call by symbol. */
CUresult cuInit(unsigned int Flags);
CUresult cuDeviceGetCount(int *count);
CUresult cuDeviceGet(CUdevice *device, int ordinal);
CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev);
CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize);
CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes, size_t Height,
                            unsigned int ElementSizeBytes);
CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags);
CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream);
CUresult cuMemFree_v2(CUdeviceptr dptr);
CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream);
CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop,
                     unsigned long long flags);
CUresult cuMemRelease(CUmemGenericAllocationHandle handle);
CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                  unsigned long long flags);
CUresult cuMemUnmap(CUdeviceptr ptr, size_t size);
CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags);
CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *symbolStatus);

/* The simulated context id of this process's context. */
CUresult gvsim_ctx_id(unsigned *id);
/* The device descriptors cuInit opened (nvidiactl first), up to max; returns how many. */
int gvsim_device_fds(int *out, int max);
/* Run in MIG GPU instance gi (SIM_GI_NONE: none); before cuCtxCreate. */
void gvsim_set_mig_instance(unsigned gi);
/* The context is an MPS client's (NVML lists it in the MPS compute list); before cuCtxCreate. */
void gvsim_set_mps_client(int on);
/* The message of the last failure, in CUDA's wording where CUDA has one. */
const char *gvsim_last_error(void);
