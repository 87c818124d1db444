/* nvml_abi.h: the part of NVML's C ABI that ghostvram uses, declared by the project itself
 * so that it builds with no NVIDIA header (nvml.h from NVML API 13, go-nvml gen/nvml/nvml.h;
 * older layouts from the nvml.h bundled with each driver in nvidia-settings).
 * Facts and sources: docs/nvml-abi.md. Sizes are checked with static assertions below.
 * The simulated driver (sim/) implements exactly these declarations. */
#pragma once
#include <assert.h>
#include <stddef.h>

typedef int nvmlReturn_t;                       /* an enum in nvml.h: 4 bytes */
typedef struct nvmlDevice_st *nvmlDevice_t;      /* opaque */
typedef struct nvmlEventSet_st *nvmlEventSet_t;  /* opaque */

enum {
        NVML_SUCCESS = 0,
        NVML_ERROR_UNINITIALIZED = 1,
        NVML_ERROR_INVALID_ARGUMENT = 2,
        NVML_ERROR_NOT_SUPPORTED = 3,
        NVML_ERROR_NO_PERMISSION = 4,
        NVML_ERROR_ALREADY_INITIALIZED = 5,
        NVML_ERROR_NOT_FOUND = 6,
        NVML_ERROR_INSUFFICIENT_SIZE = 7,
        NVML_ERROR_INSUFFICIENT_POWER = 8,
        NVML_ERROR_DRIVER_NOT_LOADED = 9,
        NVML_ERROR_TIMEOUT = 10,
        NVML_ERROR_IRQ_ISSUE = 11,
        NVML_ERROR_LIBRARY_NOT_FOUND = 12,
        NVML_ERROR_FUNCTION_NOT_FOUND = 13,
        NVML_ERROR_CORRUPTED_INFOROM = 14,
        NVML_ERROR_GPU_IS_LOST = 15,
        NVML_ERROR_RESET_REQUIRED = 16,
        NVML_ERROR_OPERATING_SYSTEM = 17,
        NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
        NVML_ERROR_IN_USE = 19,
        NVML_ERROR_MEMORY = 20,
        NVML_ERROR_NO_DATA = 21,
        NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
        NVML_ERROR_UNKNOWN = 999,
};

#define NVML_VALUE_NOT_AVAILABLE_ULL 0xFFFFFFFFFFFFFFFFull
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE 32
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE 16
#define NVML_DEVICE_UUID_V2_BUFFER_SIZE 96
#define NVML_DEVICE_NAME_V2_BUFFER_SIZE 96
#define NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE 80
#define NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE 80
#define NVML_FEATURE_DISABLED 0
#define NVML_FEATURE_ENABLED 1
#define NVML_DEVICE_MIG_DISABLE 0
#define NVML_DEVICE_MIG_ENABLE 1
#define NVML_EVENT_TYPE_XID_CRITICAL_ERROR 0x0000000000000008ull
/* nvmlMemoryErrorType_t / nvmlEccCounterType_t values (enums in nvml.h, passed as unsigned int);
 * named apart from nvml.h's enumerators, which a header may not redefine as macros */
#define GV_NVML_MEMORY_ERROR_TYPE_UNCORRECTED 1
#define GV_NVML_VOLATILE_ECC 0
/* nvmlTemperatureSensors_t, nvmlClockType_t, nvmlPcieUtilCounter_t values (enums in nvml.h,
 * passed as unsigned int), for top's per-GPU figures */
#define GV_NVML_TEMPERATURE_GPU 0
#define GV_NVML_CLOCK_SM 1
#define GV_NVML_CLOCK_MEM 2
#define GV_NVML_PCIE_UTIL_TX_BYTES 0
#define GV_NVML_PCIE_UTIL_RX_BYTES 1
/* gpuInstanceId / computeInstanceId of a process not in a MIG instance */
#define NVML_INSTANCE_ID_INVALID 0xFFFFFFFFu

/* NVML_STRUCT_VERSION(data, ver) = sizeof(struct) | (ver << 24) */
#define GV_NVML_STRUCT_VERSION(size, ver) ((unsigned int)((size) | ((unsigned int)(ver) << 24U)))

typedef struct {
        char busIdLegacy[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE]; /* "%04X:%02X:%02X.0"; all layouts */
        unsigned int domain;
        unsigned int bus;
        unsigned int device;
        unsigned int pciDeviceId;
        unsigned int pciSubSystemId;
        char busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];          /* "%08X:%02X:%02X.0"; only after _v3 */
} nvmlPciInfo_t;

typedef struct {
        unsigned long long total;
        unsigned long long free;
        unsigned long long used;                /* v1: reserved + allocated */
} nvmlMemory_t;

typedef struct {
        unsigned int version;                   /* nvmlMemory_v2 */
        unsigned long long total;
        unsigned long long reserved;            /* driver / firmware */
        unsigned long long free;
        unsigned long long used;                /* allocated: what nvidia-smi shows as Used */
} nvmlMemory_v2_t;

#define nvmlMemory_v2 GV_NVML_STRUCT_VERSION(sizeof(nvmlMemory_v2_t), 2)

typedef struct {
        unsigned int pid;
        unsigned long long usedGpuMemory;
} nvmlProcessInfo_v1_t;

typedef struct {
        unsigned int pid;
        unsigned long long usedGpuMemory;
        unsigned int gpuInstanceId;
        unsigned int computeInstanceId;
} nvmlProcessInfo_v2_t;                         /* also what _v3 takes, except on 535.43-535.86 */

typedef struct {
        unsigned int pid;
        unsigned long long usedGpuMemory;
        unsigned int gpuInstanceId;
        unsigned int computeInstanceId;
        unsigned long long usedGpuCcProtectedMemory;
} nvmlProcessDetail_v1_t;                       /* = _v3's record on 535.43.02-535.86.05 */

typedef struct {
        unsigned int version;                   /* nvmlProcessDetailList_v1 */
        unsigned int mode;                      /* 0 compute, 1 graphics, 2 MPS */
        unsigned int numProcArrayEntries;
        nvmlProcessDetail_v1_t *procArray;
} nvmlProcessDetailList_v1_t;

#define nvmlProcessDetailList_v1 GV_NVML_STRUCT_VERSION(sizeof(nvmlProcessDetailList_v1_t), 1)

typedef struct {
        nvmlDevice_t device;
        unsigned long long eventType;
        unsigned long long eventData;           /* the Xid for XidCriticalError; 999 = unknown */
        unsigned int gpuInstanceId;
        unsigned int computeInstanceId;
} nvmlEventData_t;                              /* 32 bytes since 450; 24 before (first 3 fields) */

typedef struct {
        unsigned int gpu;                       /* % of the last sample period a kernel ran */
        unsigned int memory;                    /* % of it device memory was read or written */
} nvmlUtilization_t;

typedef struct {
        unsigned int pid;
        unsigned long long timeStamp;           /* CPU timestamp, microseconds */
        unsigned int smUtil;                    /* % */
        unsigned int memUtil;
        unsigned int encUtil;
        unsigned int decUtil;
} nvmlProcessUtilizationSample_t;

/* The ABI as published (LP64). A mismatch here means the declarations are wrong. */
static_assert(sizeof(nvmlPciInfo_t) == 68, "nvmlPciInfo_t is 68 bytes");
static_assert(offsetof(nvmlPciInfo_t, busId) == 36, "busId at offset 36");
static_assert(sizeof(nvmlMemory_t) == 24, "nvmlMemory_t is 24 bytes");
static_assert(sizeof(nvmlMemory_v2_t) == 40, "nvmlMemory_v2_t is 40 bytes");
static_assert(offsetof(nvmlMemory_v2_t, used) == 32, "nvmlMemory_v2_t.used at 32");
static_assert(nvmlMemory_v2 == 0x02000028u, "nvmlMemory_v2 is 0x02000028");
static_assert(sizeof(nvmlProcessInfo_v1_t) == 16, "v1 process record is 16 bytes");
static_assert(sizeof(nvmlProcessInfo_v2_t) == 24, "v2 process record is 24 bytes");
static_assert(offsetof(nvmlProcessInfo_v2_t, gpuInstanceId) == 16, "gpuInstanceId at 16");
static_assert(sizeof(nvmlProcessDetail_v1_t) == 32, "535.43-535.86 v3 record is 32 bytes");
static_assert(sizeof(nvmlProcessDetailList_v1_t) == 24, "detail list is 24 bytes");
static_assert(nvmlProcessDetailList_v1 == 0x01000018u, "nvmlProcessDetailList_v1 is 0x01000018");
static_assert(sizeof(nvmlEventData_t) == 32, "nvmlEventData_t is 32 bytes");
static_assert(sizeof(nvmlUtilization_t) == 8, "nvmlUtilization_t is 8 bytes");
static_assert(sizeof(nvmlProcessUtilizationSample_t) == 32, "nvmlProcessUtilizationSample_t is 32 bytes");

/* Function pointer types, named after the symbols. */
typedef nvmlReturn_t (*nvmlInit_fn)(void);
typedef nvmlReturn_t (*nvmlShutdown_fn)(void);
typedef const char *(*nvmlErrorString_fn)(nvmlReturn_t);
typedef nvmlReturn_t (*nvmlSystemGetString_fn)(char *, unsigned int);
typedef nvmlReturn_t (*nvmlDeviceGetCount_fn)(unsigned int *);
typedef nvmlReturn_t (*nvmlDeviceGetHandleByIndex_fn)(unsigned int, nvmlDevice_t *);
typedef nvmlReturn_t (*nvmlDeviceGetString_fn)(nvmlDevice_t, char *, unsigned int);
typedef nvmlReturn_t (*nvmlDeviceGetUInt_fn)(nvmlDevice_t, unsigned int *);
typedef nvmlReturn_t (*nvmlDeviceGetPciInfo_fn)(nvmlDevice_t, nvmlPciInfo_t *);
typedef nvmlReturn_t (*nvmlDeviceGetMemoryInfo_fn)(nvmlDevice_t, nvmlMemory_t *);
typedef nvmlReturn_t (*nvmlDeviceGetMemoryInfo_v2_fn)(nvmlDevice_t, nvmlMemory_v2_t *);
/* the process-list calls take a record array whose stride depends on the symbol */
typedef nvmlReturn_t (*nvmlDeviceGetProcesses_fn)(nvmlDevice_t, unsigned int *, void *);
typedef nvmlReturn_t (*nvmlDeviceGetRunningProcessDetailList_fn)(nvmlDevice_t, nvmlProcessDetailList_v1_t *);
typedef nvmlReturn_t (*nvmlDeviceGetMigMode_fn)(nvmlDevice_t, unsigned int *, unsigned int *);
/* MIG devices (450+); GetMaxMigDeviceCount, GetGpuInstanceId and GetComputeInstanceId are
 * nvmlDeviceGetUInt_fn */
typedef nvmlReturn_t (*nvmlDeviceGetMigDeviceHandleByIndex_fn)(nvmlDevice_t, unsigned int, nvmlDevice_t *);
/* health (doctor): GetRemappedRows (R450+: corrected, uncorrected, isPending, failureOccurred),
 * GetRetiredPagesPendingStatus (nvmlEnableState_t *, an enum: unsigned int) is
 * nvmlDeviceGetUInt_fn, GetTotalEccErrors (error type and counter type are enums) */
typedef nvmlReturn_t (*nvmlDeviceGetRemappedRows_fn)(nvmlDevice_t, unsigned int *, unsigned int *, unsigned int *,
                                                     unsigned int *);
typedef nvmlReturn_t (*nvmlDeviceGetTotalEccErrors_fn)(nvmlDevice_t, unsigned int, unsigned int, unsigned long long *);
/* top's per-GPU figures: GetPowerUsage, GetEnforcedPowerLimit (mW) and GetFanSpeed (%) are
 * nvmlDeviceGetUInt_fn; the sensor, clock type and PCIe counter are enums (unsigned int) */
typedef nvmlReturn_t (*nvmlDeviceGetUtilizationRates_fn)(nvmlDevice_t, nvmlUtilization_t *);
typedef nvmlReturn_t (*nvmlDeviceGetTemperature_fn)(nvmlDevice_t, unsigned int, unsigned int *);
typedef nvmlReturn_t (*nvmlDeviceGetClockInfo_fn)(nvmlDevice_t, unsigned int, unsigned int *);
typedef nvmlReturn_t (*nvmlDeviceGetPcieThroughput_fn)(nvmlDevice_t, unsigned int, unsigned int *);
/* GetEncoderUtilization / GetDecoderUtilization: % and the sampling period in microseconds */
typedef nvmlReturn_t (*nvmlDeviceGetCodecUtilization_fn)(nvmlDevice_t, unsigned int *, unsigned int *);
/* samples NULL: *count gets how many there are (INSUFFICIENT_SIZE); lastSeen in microseconds */
typedef nvmlReturn_t (*nvmlDeviceGetProcessUtilization_fn)(nvmlDevice_t, nvmlProcessUtilizationSample_t *, unsigned int *,
                                                           unsigned long long);
typedef nvmlReturn_t (*nvmlEventSetCreate_fn)(nvmlEventSet_t *);
typedef nvmlReturn_t (*nvmlDeviceRegisterEvents_fn)(nvmlDevice_t, unsigned long long, nvmlEventSet_t);
typedef nvmlReturn_t (*nvmlEventSetWait_fn)(nvmlEventSet_t, nvmlEventData_t *, unsigned int);
typedef nvmlReturn_t (*nvmlEventSetFree_fn)(nvmlEventSet_t);
