/* nvml_header_abi: the project's own NVML declarations (src/collect/nvml_abi.h) judged by
 * NVIDIA's nvml.h. Built and run by tests/integration/t_oracle_header_abi.sh against each
 * header scripts/fetch-nvidia-userspace unpacks (CUDA 11.8 from bookworm, 12.4 from trixie).
 *
 * How: nvml.h is included first and each of its types and constants is captured under an
 * nv_ name; then nvml_abi.h is included with its type and enumerator names renamed by macros
 * (so both sets coexist), and each size, field offset and size, constant and prototype is
 * compared at run time, one line per check. The script makes sure every name nvml_abi.h
 * declares and every symbol the project dlsym()s is checked here.
 *
 * Prototypes: the project declares function-pointer types with its own struct types, which C
 * cannot compare with NVIDIA's directly. Each prototype is written once as SIG(P), a macro
 * whose every type is spelled P##name: SIG(nv_) must be exactly the type of NVIDIA's
 * declaration and SIG() exactly the project's typedef; the structs on both sides are
 * compared field by field. Where the project is deliberately looser (an enum passed as
 * unsigned int, a record array as void *), the SIG names a type that differs per side and the
 * sizes are compared. Exit status: 0 all equal, 1 a difference, 2 the header lacks a name
 * this test requires (reported, never skipped). */
#define NVML_NO_UNVERSIONED_FUNC_DEFS /* plain names are the v1 calls, as the project dlsyms them */
#include <nvml.h>

#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* ---- 1. NVIDIA's side, captured before nvml_abi.h redefines the names ---------------------- */

typedef nvmlReturn_t nv_nvmlReturn_t;
typedef nvmlDevice_t nv_nvmlDevice_t;
typedef nvmlEventSet_t nv_nvmlEventSet_t;
typedef nvmlPciInfo_t nv_nvmlPciInfo_t;
typedef nvmlMemory_t nv_nvmlMemory_t;
typedef nvmlMemory_v2_t nv_nvmlMemory_v2_t;
typedef nvmlProcessInfo_v1_t nv_nvmlProcessInfo_v1_t;
typedef nvmlProcessInfo_v2_t nv_nvmlProcessInfo_v2_t;
typedef nvmlEventData_t nv_nvmlEventData_t;
typedef nvmlUtilization_t nv_nvmlUtilization_t;
typedef nvmlProcessUtilizationSample_t nv_nvmlProcessUtilizationSample_t;
#ifdef nvmlProcessDetailList_v1 /* 535.104+ headers (CUDA 12.3+) */
#define NV_HAVE_DETAIL 1
typedef nvmlProcessDetail_v1_t nv_nvmlProcessDetail_v1_t;
typedef nvmlProcessDetailList_v1_t nv_nvmlProcessDetailList_v1_t;
#else
#define NV_HAVE_DETAIL 0
#endif
/* types the project passes as something ABI-equal (see the prototypes below) */
typedef nvmlEnableState_t nv_ENABLE_STATE;
typedef nvmlMemoryErrorType_t nv_ERROR_TYPE;
typedef nvmlEccCounterType_t nv_ECC_COUNTER;
typedef nvmlTemperatureSensors_t nv_TEMP_SENSOR;
typedef nvmlClockType_t nv_CLOCK_TYPE;
typedef nvmlPcieUtilCounter_t nv_PCIE_COUNTER;
typedef nvmlProcessInfo_v1_t nv_PROC_V1;
typedef nvmlProcessInfo_v2_t nv_PROC_V2;
typedef nvmlProcessInfo_t nv_PROC_V3; /* the 24-byte record of every header but 535.43-535.86 */

/* nvml.h's constants under the project's names, as unsigned long long */
#define NV_CONSTANTS(X)                                                                           \
        X(NVML_SUCCESS, NVML_SUCCESS)                                                             \
        X(NVML_ERROR_UNINITIALIZED, NVML_ERROR_UNINITIALIZED)                                     \
        X(NVML_ERROR_INVALID_ARGUMENT, NVML_ERROR_INVALID_ARGUMENT)                               \
        X(NVML_ERROR_NOT_SUPPORTED, NVML_ERROR_NOT_SUPPORTED)                                     \
        X(NVML_ERROR_NO_PERMISSION, NVML_ERROR_NO_PERMISSION)                                     \
        X(NVML_ERROR_ALREADY_INITIALIZED, NVML_ERROR_ALREADY_INITIALIZED)                         \
        X(NVML_ERROR_NOT_FOUND, NVML_ERROR_NOT_FOUND)                                             \
        X(NVML_ERROR_INSUFFICIENT_SIZE, NVML_ERROR_INSUFFICIENT_SIZE)                             \
        X(NVML_ERROR_INSUFFICIENT_POWER, NVML_ERROR_INSUFFICIENT_POWER)                           \
        X(NVML_ERROR_DRIVER_NOT_LOADED, NVML_ERROR_DRIVER_NOT_LOADED)                             \
        X(NVML_ERROR_TIMEOUT, NVML_ERROR_TIMEOUT)                                                 \
        X(NVML_ERROR_IRQ_ISSUE, NVML_ERROR_IRQ_ISSUE)                                             \
        X(NVML_ERROR_LIBRARY_NOT_FOUND, NVML_ERROR_LIBRARY_NOT_FOUND)                             \
        X(NVML_ERROR_FUNCTION_NOT_FOUND, NVML_ERROR_FUNCTION_NOT_FOUND)                           \
        X(NVML_ERROR_CORRUPTED_INFOROM, NVML_ERROR_CORRUPTED_INFOROM)                             \
        X(NVML_ERROR_GPU_IS_LOST, NVML_ERROR_GPU_IS_LOST)                                         \
        X(NVML_ERROR_RESET_REQUIRED, NVML_ERROR_RESET_REQUIRED)                                   \
        X(NVML_ERROR_OPERATING_SYSTEM, NVML_ERROR_OPERATING_SYSTEM)                               \
        X(NVML_ERROR_LIB_RM_VERSION_MISMATCH, NVML_ERROR_LIB_RM_VERSION_MISMATCH)                 \
        X(NVML_ERROR_IN_USE, NVML_ERROR_IN_USE)                                                   \
        X(NVML_ERROR_MEMORY, NVML_ERROR_MEMORY)                                                   \
        X(NVML_ERROR_NO_DATA, NVML_ERROR_NO_DATA)                                                 \
        X(NVML_ERROR_ARGUMENT_VERSION_MISMATCH, NVML_ERROR_ARGUMENT_VERSION_MISMATCH)             \
        X(NVML_ERROR_UNKNOWN, NVML_ERROR_UNKNOWN)                                                 \
        X(NVML_VALUE_NOT_AVAILABLE_ULL, NVML_VALUE_NOT_AVAILABLE)                                 \
        X(NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE, NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE)                 \
        X(NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE, NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE)           \
        X(NVML_DEVICE_UUID_V2_BUFFER_SIZE, NVML_DEVICE_UUID_V2_BUFFER_SIZE)                       \
        X(NVML_DEVICE_NAME_V2_BUFFER_SIZE, NVML_DEVICE_NAME_V2_BUFFER_SIZE)                       \
        X(NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE, NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE)         \
        X(NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE, NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE)             \
        X(NVML_FEATURE_DISABLED, NVML_FEATURE_DISABLED)                                           \
        X(NVML_FEATURE_ENABLED, NVML_FEATURE_ENABLED)                                             \
        X(NVML_DEVICE_MIG_DISABLE, NVML_DEVICE_MIG_DISABLE)                                       \
        X(NVML_DEVICE_MIG_ENABLE, NVML_DEVICE_MIG_ENABLE)                                         \
        X(NVML_EVENT_TYPE_XID_CRITICAL_ERROR, nvmlEventTypeXidCriticalError)                      \
        X(NVML_INSTANCE_ID_INVALID, INVALID_GPU_INSTANCE_ID)                                      \
        X(GV_NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_MEMORY_ERROR_TYPE_UNCORRECTED)             \
        X(GV_NVML_VOLATILE_ECC, NVML_VOLATILE_ECC)                                                \
        X(GV_NVML_TEMPERATURE_GPU, NVML_TEMPERATURE_GPU)                                          \
        X(GV_NVML_CLOCK_SM, NVML_CLOCK_SM)                                                        \
        X(GV_NVML_CLOCK_MEM, NVML_CLOCK_MEM)                                                      \
        X(GV_NVML_PCIE_UTIL_TX_BYTES, NVML_PCIE_UTIL_TX_BYTES)                                    \
        X(GV_NVML_PCIE_UTIL_RX_BYTES, NVML_PCIE_UTIL_RX_BYTES)                                    \
        X(nvmlMemory_v2, nvmlMemory_v2)                                                           \
        X(GV_NVML_STRUCT_VERSION(40, 2), NVML_STRUCT_VERSION(Memory, 2))
#define NV_CAPTURE(ours, theirs) (unsigned long long)(theirs),
static const unsigned long long nv_constants[] = { NV_CONSTANTS(NV_CAPTURE) };
#if NV_HAVE_DETAIL
static const unsigned long long nv_detail_list_v1 = nvmlProcessDetailList_v1;
#endif

/* nvml.h macros that nvml_abi.h defines again: their values are captured above */
#undef NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE
#undef NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE
#undef NVML_DEVICE_UUID_V2_BUFFER_SIZE
#undef NVML_DEVICE_NAME_V2_BUFFER_SIZE
#undef NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE
#undef NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE
#undef NVML_DEVICE_MIG_DISABLE
#undef NVML_DEVICE_MIG_ENABLE
#undef nvmlMemory_v2
#undef nvmlProcessDetailList_v1

/* ---- 2. the project's side, every name moved aside -------------------------------------- */

#define nvmlReturn_t gv_nvmlReturn_t
#define nvmlDevice_t gv_nvmlDevice_t
#define nvmlEventSet_t gv_nvmlEventSet_t
#define nvmlPciInfo_t gv_nvmlPciInfo_t
#define nvmlMemory_t gv_nvmlMemory_t
#define nvmlMemory_v2_t gv_nvmlMemory_v2_t
#define nvmlProcessInfo_v1_t gv_nvmlProcessInfo_v1_t
#define nvmlProcessInfo_v2_t gv_nvmlProcessInfo_v2_t
#define nvmlProcessDetail_v1_t gv_nvmlProcessDetail_v1_t
#define nvmlProcessDetailList_v1_t gv_nvmlProcessDetailList_v1_t
#define nvmlEventData_t gv_nvmlEventData_t
#define nvmlUtilization_t gv_nvmlUtilization_t
#define nvmlProcessUtilizationSample_t gv_nvmlProcessUtilizationSample_t
#define NVML_SUCCESS GV_NVML_SUCCESS
#define NVML_ERROR_UNINITIALIZED GV_NVML_ERROR_UNINITIALIZED
#define NVML_ERROR_INVALID_ARGUMENT GV_NVML_ERROR_INVALID_ARGUMENT
#define NVML_ERROR_NOT_SUPPORTED GV_NVML_ERROR_NOT_SUPPORTED
#define NVML_ERROR_NO_PERMISSION GV_NVML_ERROR_NO_PERMISSION
#define NVML_ERROR_ALREADY_INITIALIZED GV_NVML_ERROR_ALREADY_INITIALIZED
#define NVML_ERROR_NOT_FOUND GV_NVML_ERROR_NOT_FOUND
#define NVML_ERROR_INSUFFICIENT_SIZE GV_NVML_ERROR_INSUFFICIENT_SIZE
#define NVML_ERROR_INSUFFICIENT_POWER GV_NVML_ERROR_INSUFFICIENT_POWER
#define NVML_ERROR_DRIVER_NOT_LOADED GV_NVML_ERROR_DRIVER_NOT_LOADED
#define NVML_ERROR_TIMEOUT GV_NVML_ERROR_TIMEOUT
#define NVML_ERROR_IRQ_ISSUE GV_NVML_ERROR_IRQ_ISSUE
#define NVML_ERROR_LIBRARY_NOT_FOUND GV_NVML_ERROR_LIBRARY_NOT_FOUND
#define NVML_ERROR_FUNCTION_NOT_FOUND GV_NVML_ERROR_FUNCTION_NOT_FOUND
#define NVML_ERROR_CORRUPTED_INFOROM GV_NVML_ERROR_CORRUPTED_INFOROM
#define NVML_ERROR_GPU_IS_LOST GV_NVML_ERROR_GPU_IS_LOST
#define NVML_ERROR_RESET_REQUIRED GV_NVML_ERROR_RESET_REQUIRED
#define NVML_ERROR_OPERATING_SYSTEM GV_NVML_ERROR_OPERATING_SYSTEM
#define NVML_ERROR_LIB_RM_VERSION_MISMATCH GV_NVML_ERROR_LIB_RM_VERSION_MISMATCH
#define NVML_ERROR_IN_USE GV_NVML_ERROR_IN_USE
#define NVML_ERROR_MEMORY GV_NVML_ERROR_MEMORY
#define NVML_ERROR_NO_DATA GV_NVML_ERROR_NO_DATA
#define NVML_ERROR_ARGUMENT_VERSION_MISMATCH GV_NVML_ERROR_ARGUMENT_VERSION_MISMATCH
#define NVML_ERROR_UNKNOWN GV_NVML_ERROR_UNKNOWN
/* nvml.h's enumerators NVML_FEATURE_* are shadowed by nvml_abi.h's macros from here on */
#include "collect/nvml_abi.h"

typedef unsigned int ENABLE_STATE; /* nvmlEnableState_t, an enum: 4 bytes */
typedef unsigned int ERROR_TYPE;   /* nvmlMemoryErrorType_t */
typedef unsigned int ECC_COUNTER;  /* nvmlEccCounterType_t */
typedef unsigned int TEMP_SENSOR;  /* nvmlTemperatureSensors_t */
typedef unsigned int CLOCK_TYPE;   /* nvmlClockType_t */
typedef unsigned int PCIE_COUNTER; /* nvmlPcieUtilCounter_t */
typedef void PROC_V1;              /* record arrays: the stride depends on the symbol */
typedef void PROC_V2;
typedef void PROC_V3;

/* ---- 3. the checks ----------------------------------------------------------------------- */

static int failures, absent, checks;

static void check(const char *what, unsigned long long ours, unsigned long long theirs)
{
        checks++;
        if (ours == theirs) {
                printf("ok   %s = %llu\n", what, ours);
                return;
        }
        printf("FAIL %s: nvml_abi.h says %llu (0x%llx), nvml.h says %llu (0x%llx)\n", what, ours, ours, theirs,
               theirs);
        failures++;
}

static void __attribute__((unused)) missing(const char *what)
{
        printf("ABSENT %s: not in this nvml.h\n", what);
        absent++;
}

#define SIZE(T) check("sizeof(" #T ")", sizeof(T), sizeof(nv_##T))
#define FIELD(T, f)                                                                               \
        do {                                                                                      \
                check("offsetof(" #T ", " #f ")", offsetof(T, f), offsetof(nv_##T, f));           \
                check("sizeof(" #T "." #f ")", sizeof(((T *)0)->f), sizeof(((nv_##T *)0)->f));    \
        } while (0)

/* the project's fn typedef `fn` is SIG(), and NVIDIA's `sym` is SIG(nv_) */
#define PROTO(fn, sym, SIG)                                                                      \
        do {                                                                                      \
                check("prototype " #fn " is the project's " #SIG, __builtin_types_compatible_p(fn, SIG()), 1); \
                check("prototype " #sym " in nvml.h is " #SIG,                                    \
                      __builtin_types_compatible_p(__typeof__(&sym), SIG(nv_)), 1);              \
        } while (0)

/* every prototype the project uses, spelled once */
#define SIG_VOID(P) P##nvmlReturn_t (*)(void)
#define SIG_ERRSTR(P) const char *(*)(P##nvmlReturn_t)
#define SIG_SYSSTR(P) P##nvmlReturn_t (*)(char *, unsigned int)
#define SIG_COUNT(P) P##nvmlReturn_t (*)(unsigned int *)
#define SIG_HANDLE(P) P##nvmlReturn_t (*)(unsigned int, P##nvmlDevice_t *)
#define SIG_DEVSTR(P) P##nvmlReturn_t (*)(P##nvmlDevice_t, char *, unsigned int)
#define SIG_DEVUINT(P) P##nvmlReturn_t (*)(P##nvmlDevice_t, unsigned int *)
#define SIG_DEVENABLE(P) P##nvmlReturn_t (*)(P##nvmlDevice_t, P##ENABLE_STATE *)
#define SIG_PCI(P) P##nvmlReturn_t (*)(P##nvmlDevice_t, P##nvmlPciInfo_t *)
#define SIG_MEM(P) P##nvmlReturn_t (*)(P##nvmlDevice_t, P##nvmlMemory_t *)
#define SIG_MEM2(P) P##nvmlReturn_t (*)(P##nvmlDevice_t, P##nvmlMemory_v2_t *)
#define SIG_PROCS1(P) P##nvmlReturn_t (*)(P##nvmlDevice_t, unsigned int *, P##PROC_V1 *)
#define SIG_PROCS2(P) P##nvmlReturn_t (*)(P##nvmlDevice_t, unsigned int *, P##PROC_V2 *)
#define SIG_PROCS3(P) P##nvmlReturn_t (*)(P##nvmlDevice_t, unsigned int *, P##PROC_V3 *)
#define SIG_DETAIL(P) P##nvmlReturn_t (*)(P##nvmlDevice_t, P##nvmlProcessDetailList_v1_t *)
#define SIG_MIG(P) P##nvmlReturn_t (*)(P##nvmlDevice_t, unsigned int *, unsigned int *)
#define SIG_MIGHANDLE(P) P##nvmlReturn_t (*)(P##nvmlDevice_t, unsigned int, P##nvmlDevice_t *)
#define SIG_REMAP(P) P##nvmlReturn_t (*)(P##nvmlDevice_t, unsigned int *, unsigned int *, unsigned int *, unsigned int *)
#define SIG_ECC(P) P##nvmlReturn_t (*)(P##nvmlDevice_t, P##ERROR_TYPE, P##ECC_COUNTER, unsigned long long *)
#define SIG_UTIL(P) P##nvmlReturn_t (*)(P##nvmlDevice_t, P##nvmlUtilization_t *)
#define SIG_TEMP(P) P##nvmlReturn_t (*)(P##nvmlDevice_t, P##TEMP_SENSOR, unsigned int *)
#define SIG_CLOCK(P) P##nvmlReturn_t (*)(P##nvmlDevice_t, P##CLOCK_TYPE, unsigned int *)
#define SIG_PCIE(P) P##nvmlReturn_t (*)(P##nvmlDevice_t, P##PCIE_COUNTER, unsigned int *)
#define SIG_CODEC(P) P##nvmlReturn_t (*)(P##nvmlDevice_t, unsigned int *, unsigned int *)
#define SIG_PROCUTIL(P) P##nvmlReturn_t (*)(P##nvmlDevice_t, P##nvmlProcessUtilizationSample_t *, unsigned int *, unsigned long long)
#define SIG_SETCREATE(P) P##nvmlReturn_t (*)(P##nvmlEventSet_t *)
#define SIG_REGISTER(P) P##nvmlReturn_t (*)(P##nvmlDevice_t, unsigned long long, P##nvmlEventSet_t)
#define SIG_WAIT(P) P##nvmlReturn_t (*)(P##nvmlEventSet_t, P##nvmlEventData_t *, unsigned int)
#define SIG_SETFREE(P) P##nvmlReturn_t (*)(P##nvmlEventSet_t)

static const char *const constant_names[] = {
#define NV_NAME(ours, theirs) #ours,
        NV_CONSTANTS(NV_NAME)
};

int main(void)
{
        /* types: sizes, then every field of every struct nvml_abi.h declares */
        SIZE(nvmlReturn_t);
        SIZE(nvmlDevice_t);
        SIZE(nvmlEventSet_t);
        SIZE(ENABLE_STATE);
        check("nvmlDevice_t is the same opaque struct", __builtin_types_compatible_p(nvmlDevice_t, nv_nvmlDevice_t), 1);
        check("nvmlEventSet_t is the same opaque struct",
              __builtin_types_compatible_p(nvmlEventSet_t, nv_nvmlEventSet_t), 1);

        SIZE(nvmlPciInfo_t);
        FIELD(nvmlPciInfo_t, busIdLegacy);
        FIELD(nvmlPciInfo_t, domain);
        FIELD(nvmlPciInfo_t, bus);
        FIELD(nvmlPciInfo_t, device);
        FIELD(nvmlPciInfo_t, pciDeviceId);
        FIELD(nvmlPciInfo_t, pciSubSystemId);
        FIELD(nvmlPciInfo_t, busId);

        SIZE(nvmlMemory_t);
        FIELD(nvmlMemory_t, total);
        FIELD(nvmlMemory_t, free);
        FIELD(nvmlMemory_t, used);

        SIZE(nvmlMemory_v2_t);
        FIELD(nvmlMemory_v2_t, version);
        FIELD(nvmlMemory_v2_t, total);
        FIELD(nvmlMemory_v2_t, reserved);
        FIELD(nvmlMemory_v2_t, free);
        FIELD(nvmlMemory_v2_t, used);

        SIZE(nvmlProcessInfo_v1_t);
        FIELD(nvmlProcessInfo_v1_t, pid);
        FIELD(nvmlProcessInfo_v1_t, usedGpuMemory);

        SIZE(nvmlProcessInfo_v2_t);
        FIELD(nvmlProcessInfo_v2_t, pid);
        FIELD(nvmlProcessInfo_v2_t, usedGpuMemory);
        FIELD(nvmlProcessInfo_v2_t, gpuInstanceId);
        FIELD(nvmlProcessInfo_v2_t, computeInstanceId);
        check("sizeof(nvmlProcessInfo_t) (what _v3 takes) == sizeof(nvmlProcessInfo_v2_t)", sizeof(nvmlProcessInfo_v2_t),
              sizeof(nv_PROC_V3));

#if NV_HAVE_DETAIL
        SIZE(nvmlProcessDetail_v1_t);
        FIELD(nvmlProcessDetail_v1_t, pid);
        FIELD(nvmlProcessDetail_v1_t, usedGpuMemory);
        FIELD(nvmlProcessDetail_v1_t, gpuInstanceId);
        FIELD(nvmlProcessDetail_v1_t, computeInstanceId);
        FIELD(nvmlProcessDetail_v1_t, usedGpuCcProtectedMemory);
        SIZE(nvmlProcessDetailList_v1_t);
        FIELD(nvmlProcessDetailList_v1_t, version);
        FIELD(nvmlProcessDetailList_v1_t, mode);
        FIELD(nvmlProcessDetailList_v1_t, numProcArrayEntries);
        FIELD(nvmlProcessDetailList_v1_t, procArray);
        check("nvmlProcessDetailList_v1", nvmlProcessDetailList_v1, nv_detail_list_v1);
#else
        missing("nvmlProcessDetail_v1_t, nvmlProcessDetailList_v1_t, nvmlProcessDetailList_v1");
#endif

        SIZE(nvmlEventData_t);
        FIELD(nvmlEventData_t, device);
        FIELD(nvmlEventData_t, eventType);
        FIELD(nvmlEventData_t, eventData);
        FIELD(nvmlEventData_t, gpuInstanceId);
        FIELD(nvmlEventData_t, computeInstanceId);
        SIZE(nvmlUtilization_t);
        FIELD(nvmlUtilization_t, gpu);
        FIELD(nvmlUtilization_t, memory);
        SIZE(nvmlProcessUtilizationSample_t);
        FIELD(nvmlProcessUtilizationSample_t, pid);
        FIELD(nvmlProcessUtilizationSample_t, timeStamp);
        FIELD(nvmlProcessUtilizationSample_t, smUtil);
        FIELD(nvmlProcessUtilizationSample_t, memUtil);
        FIELD(nvmlProcessUtilizationSample_t, encUtil);
        FIELD(nvmlProcessUtilizationSample_t, decUtil);

        /* constants */
#define OURS(ours, theirs) (unsigned long long)(ours),
        static const unsigned long long our_constants[] = { NV_CONSTANTS(OURS) };
        for (size_t i = 0; i < sizeof(our_constants) / sizeof(our_constants[0]); i++)
                check(constant_names[i], our_constants[i], nv_constants[i]);

        /* prototypes: each symbol the project resolves, with the type it calls it through */
        PROTO(nvmlInit_fn, nvmlInit_v2, SIG_VOID);
        PROTO(nvmlInit_fn, nvmlInit, SIG_VOID);
        PROTO(nvmlShutdown_fn, nvmlShutdown, SIG_VOID);
        PROTO(nvmlErrorString_fn, nvmlErrorString, SIG_ERRSTR);
        PROTO(nvmlSystemGetString_fn, nvmlSystemGetDriverVersion, SIG_SYSSTR);
        PROTO(nvmlSystemGetString_fn, nvmlSystemGetNVMLVersion, SIG_SYSSTR);
        PROTO(nvmlDeviceGetCount_fn, nvmlDeviceGetCount_v2, SIG_COUNT);
        PROTO(nvmlDeviceGetCount_fn, nvmlDeviceGetCount, SIG_COUNT);
        PROTO(nvmlDeviceGetHandleByIndex_fn, nvmlDeviceGetHandleByIndex_v2, SIG_HANDLE);
        PROTO(nvmlDeviceGetHandleByIndex_fn, nvmlDeviceGetHandleByIndex, SIG_HANDLE);
        PROTO(nvmlDeviceGetString_fn, nvmlDeviceGetName, SIG_DEVSTR);
        PROTO(nvmlDeviceGetString_fn, nvmlDeviceGetUUID, SIG_DEVSTR);
        PROTO(nvmlDeviceGetUInt_fn, nvmlDeviceGetMinorNumber, SIG_DEVUINT);
        PROTO(nvmlDeviceGetUInt_fn, nvmlDeviceGetPersistenceMode, SIG_DEVENABLE);
        PROTO(nvmlDeviceGetPciInfo_fn, nvmlDeviceGetPciInfo_v3, SIG_PCI);
        PROTO(nvmlDeviceGetPciInfo_fn, nvmlDeviceGetPciInfo_v2, SIG_PCI);
        PROTO(nvmlDeviceGetPciInfo_fn, nvmlDeviceGetPciInfo, SIG_PCI);
        PROTO(nvmlDeviceGetMemoryInfo_fn, nvmlDeviceGetMemoryInfo, SIG_MEM);
        PROTO(nvmlDeviceGetMemoryInfo_v2_fn, nvmlDeviceGetMemoryInfo_v2, SIG_MEM2);
        PROTO(nvmlDeviceGetProcesses_fn, nvmlDeviceGetComputeRunningProcesses_v3, SIG_PROCS3);
        PROTO(nvmlDeviceGetProcesses_fn, nvmlDeviceGetComputeRunningProcesses_v2, SIG_PROCS2);
        PROTO(nvmlDeviceGetProcesses_fn, nvmlDeviceGetComputeRunningProcesses, SIG_PROCS1);
        PROTO(nvmlDeviceGetProcesses_fn, nvmlDeviceGetGraphicsRunningProcesses_v3, SIG_PROCS3);
        PROTO(nvmlDeviceGetProcesses_fn, nvmlDeviceGetGraphicsRunningProcesses_v2, SIG_PROCS2);
        PROTO(nvmlDeviceGetProcesses_fn, nvmlDeviceGetGraphicsRunningProcesses, SIG_PROCS1);
        PROTO(nvmlDeviceGetProcesses_fn, nvmlDeviceGetMPSComputeRunningProcesses_v3, SIG_PROCS3);
        PROTO(nvmlDeviceGetProcesses_fn, nvmlDeviceGetMPSComputeRunningProcesses_v2, SIG_PROCS2);
        PROTO(nvmlDeviceGetProcesses_fn, nvmlDeviceGetMPSComputeRunningProcesses, SIG_PROCS1);
#if NV_HAVE_DETAIL
        PROTO(nvmlDeviceGetRunningProcessDetailList_fn, nvmlDeviceGetRunningProcessDetailList, SIG_DETAIL);
        /* only probed for presence by the stride rule (docs/nvml-abi.md): declared, never called */
        check("nvmlDeviceGetConfComputeMemSizeInfo takes (nvmlDevice_t, nvmlConfComputeMemSizeInfo_t *)",
              __builtin_types_compatible_p(__typeof__(&nvmlDeviceGetConfComputeMemSizeInfo),
                                           nv_nvmlReturn_t (*)(nv_nvmlDevice_t, nvmlConfComputeMemSizeInfo_t *)),
              1);
        /* the stand-in's sim_conf_compute_mem_t: two unsigned long long */
        check("sizeof(nvmlConfComputeMemSizeInfo_t)", 2 * sizeof(unsigned long long), sizeof(nvmlConfComputeMemSizeInfo_t));
#else
        missing("nvmlDeviceGetRunningProcessDetailList, nvmlDeviceGetConfComputeMemSizeInfo");
#endif
        PROTO(nvmlDeviceGetMigMode_fn, nvmlDeviceGetMigMode, SIG_MIG);
        PROTO(nvmlDeviceGetUInt_fn, nvmlDeviceGetMaxMigDeviceCount, SIG_DEVUINT);
        PROTO(nvmlDeviceGetMigDeviceHandleByIndex_fn, nvmlDeviceGetMigDeviceHandleByIndex, SIG_MIGHANDLE);
        PROTO(nvmlDeviceGetUInt_fn, nvmlDeviceGetGpuInstanceId, SIG_DEVUINT);
        PROTO(nvmlDeviceGetUInt_fn, nvmlDeviceGetComputeInstanceId, SIG_DEVUINT);
        PROTO(nvmlDeviceGetRemappedRows_fn, nvmlDeviceGetRemappedRows, SIG_REMAP);
        PROTO(nvmlDeviceGetUInt_fn, nvmlDeviceGetRetiredPagesPendingStatus, SIG_DEVENABLE);
        PROTO(nvmlDeviceGetTotalEccErrors_fn, nvmlDeviceGetTotalEccErrors, SIG_ECC);
        PROTO(nvmlDeviceGetUtilizationRates_fn, nvmlDeviceGetUtilizationRates, SIG_UTIL);
        PROTO(nvmlDeviceGetTemperature_fn, nvmlDeviceGetTemperature, SIG_TEMP);
        PROTO(nvmlDeviceGetClockInfo_fn, nvmlDeviceGetClockInfo, SIG_CLOCK);
        PROTO(nvmlDeviceGetClockInfo_fn, nvmlDeviceGetMaxClockInfo, SIG_CLOCK);
        PROTO(nvmlDeviceGetPcieThroughput_fn, nvmlDeviceGetPcieThroughput, SIG_PCIE);
        PROTO(nvmlDeviceGetCodecUtilization_fn, nvmlDeviceGetEncoderUtilization, SIG_CODEC);
        PROTO(nvmlDeviceGetCodecUtilization_fn, nvmlDeviceGetDecoderUtilization, SIG_CODEC);
        PROTO(nvmlDeviceGetUInt_fn, nvmlDeviceGetPowerUsage, SIG_DEVUINT);
        PROTO(nvmlDeviceGetUInt_fn, nvmlDeviceGetEnforcedPowerLimit, SIG_DEVUINT);
        PROTO(nvmlDeviceGetUInt_fn, nvmlDeviceGetFanSpeed, SIG_DEVUINT);
        PROTO(nvmlDeviceGetProcessUtilization_fn, nvmlDeviceGetProcessUtilization, SIG_PROCUTIL);
        PROTO(nvmlEventSetCreate_fn, nvmlEventSetCreate, SIG_SETCREATE);
        PROTO(nvmlDeviceRegisterEvents_fn, nvmlDeviceRegisterEvents, SIG_REGISTER);
        PROTO(nvmlEventSetWait_fn, nvmlEventSetWait_v2, SIG_WAIT);
        PROTO(nvmlEventSetWait_fn, nvmlEventSetWait, SIG_WAIT);
        PROTO(nvmlEventSetFree_fn, nvmlEventSetFree, SIG_SETFREE);

        /* where the project is looser than nvml.h, the looser type must be ABI-equal */
        check("sizeof(nvmlEnableState_t) == sizeof(unsigned int)", sizeof(nv_ENABLE_STATE), sizeof(unsigned int));
        check("sizeof(nvmlMemoryErrorType_t) == sizeof(unsigned int)", sizeof(nv_ERROR_TYPE), sizeof(unsigned int));
        check("sizeof(nvmlEccCounterType_t) == sizeof(unsigned int)", sizeof(nv_ECC_COUNTER), sizeof(unsigned int));
        check("sizeof(nvmlTemperatureSensors_t) == sizeof(unsigned int)", sizeof(nv_TEMP_SENSOR), sizeof(unsigned int));
        check("sizeof(nvmlClockType_t) == sizeof(unsigned int)", sizeof(nv_CLOCK_TYPE), sizeof(unsigned int));
        check("sizeof(nvmlPcieUtilCounter_t) == sizeof(unsigned int)", sizeof(nv_PCIE_COUNTER), sizeof(unsigned int));
        check("sizeof(nvmlReturn_t) == sizeof(int)", sizeof(nv_nvmlReturn_t), sizeof(int));

        printf("%d checks, %d differences, %d absent from this header\n", checks, failures, absent);
        if (failures)
                return 1;
        return absent ? 2 : 0;
}
