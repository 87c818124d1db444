/* xid_catalog: NVIDIA's Xid catalogue as C data, and what ghostvram says about each code and
 * each kind of kernel event.
 *
 * xid_table is transcribed from the reference's "Full catalogue" table (NVIDIA Xid catalog,
 * sheet "Xids", https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html, plus
 * the pre-Ampere document's names and causes): one row per code, cells verbatim. xid_details
 * adds the reference's "Commonly seen Xids" detail (meaning, cause, action, whether a reset or
 * reboot is needed) and ghostvram's own notes. */
#include "collect/xid.h"
#include "util/i18n.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Generated from the reference's full catalogue table (NVIDIA Xid catalog, sheet "Xids",
 * plus the pre-Ampere names and causes); one row per code, columns as in the table. */
static const struct xid_info xid_table[] = {
        { 1, "ROBUST_CHANNEL_FIFO_ERROR_FIFO_METHOD", "Unused",
          "none", "CONTACT_SUPPORT", "-", "-",
          N_("Invalid or corrupted push buffer stream"), "Drv/SysMem/Bus/FB" },
        { 2, "ROBUST_CHANNEL_FIFO_ERROR_SW_METHOD", "Unused",
          "none", "CONTACT_SUPPORT", "-", "-",
          N_("Invalid or corrupted push buffer stream"), "Drv/SysMem/Bus/FB" },
        { 3, "ROBUST_CHANNEL_FIFO_ERROR_UNK_METHOD", "Unused",
          "none", "CONTACT_SUPPORT", "-", "-",
          N_("Invalid or corrupted push buffer stream"), "Drv/SysMem/Bus/FB" },
        { 4, "ROBUST_CHANNEL_FIFO_ERROR_CHANNEL_BUSY", "Unused",
          "none", "CONTACT_SUPPORT", "-", "-",
          N_("Invalid or corrupted push buffer stream"), "Drv/SysMem/Bus/FB" },
        { 5, "ROBUST_CHANNEL_FIFO_ERROR_RUNOUT_OVERFLOW", "Unused",
          "none", "CONTACT_SUPPORT", "-", "-",
          "(same)", "-" },
        { 6, "ROBUST_CHANNEL_FIFO_ERROR_PARSE_ERR", "Unused",
          "none", "CONTACT_SUPPORT", "-", "-",
          N_("Invalid or corrupted push buffer stream"), "Drv/SysMem/Bus/FB" },
        { 7, "ROBUST_CHANNEL_FIFO_ERROR_PTE_ERR", "Unused",
          "none", "CONTACT_SUPPORT", "-", "-",
          N_("Invalid or corrupted push buffer address"), "Drv/Bus/FB" },
        { 8, "ROBUST_CHANNEL_FIFO_ERROR_IDLE_TIMEOUT", N_("GPU stopped processing"),
          "A100,H100,B100,GB200", "RESTART_APP", "CONTACT_SUPPORT", "-",
          "(same)", "Drv/App/Bus/Therm" },
        { 9, "ROBUST_CHANNEL_GR_ERROR_INSTANCE", "Unused",
          "none", "CONTACT_SUPPORT", "-", "-",
          N_("Driver error programming GPU"), "Drv" },
        { 10, "ROBUST_CHANNEL_GR_ERROR_SINGLE_STEP", "Unused",
          "none", "CONTACT_SUPPORT", "-", "-",
          "(same)", "-" },
        { 11, "ROBUST_CHANNEL_GR_ERROR_MISSING_HW", N_("Invalid or corrupted push buffer stream"),
          "A100,H100,B100,GB200", "RESTART_APP", "CHECK_APP/CUDA", "-",
          "(same)", "Drv/SysMem/Bus/FB" },
        { 12, "ROBUST_CHANNEL_GR_ERROR_SW_METHOD", "Unused",
          "none", "CONTACT_SUPPORT", "-", "-",
          N_("Driver error handling GPU exception"), "Drv" },
        { 13, "ROBUST_CHANNEL_GR_EXCEPTION/ROBUST_CHANNEL_GR_ERROR_SW_NOTIFY", N_("Graphics Engine Exception"),
          "A100,H100,B100,GB200", "RESTART_APP", "WORKFLOW_XID_13", "-",
          "(same)", "HW/Drv/App/SysMem/Bus/Therm/FB" },
        { 14, "ROBUST_CHANNEL_FAKE_ERROR", "Unused",
          "A100,H100,B100,GB200", "IGNORE", "CONTACT_SUPPORT", "-",
          "(same)", "-" },
        { 15, "ROBUST_CHANNEL_SCANLINE_TIMEOUT", "Unused",
          "none", "CONTACT_SUPPORT", "-", "-",
          "(same)", "-" },
        { 16, "ROBUST_CHANNEL_VBLANK_CALLBACK_TIMEOUT", "Unused",
          "none", "CONTACT_SUPPORT", "CONTACT_SUPPORT", "-",
          N_("Display engine hung"), "Drv" },
        { 17, "ROBUST_CHANNEL_PARAMETER_ERROR", "Unused",
          "none", "CONTACT_SUPPORT", "-", "-",
          "(same)", "-" },
        { 18, "ROBUST_CHANNEL_BUS_MASTER_TIMEOUT_ERROR", "Unused",
          "none", "CONTACT_SUPPORT", "-", "-",
          N_("Bus mastering disabled in PCI Config Space"), "Drv" },
        { 19, "ROBUST_CHANNEL_DISP_MISSED_NOTIFIER", "Unused",
          "none", "CONTACT_SUPPORT", "-", "-",
          N_("Display Engine error"), "Drv" },
        { 20, "ROBUST_CHANNEL_MPEG_ERROR_SW_METHOD", "Unused",
          "none", "CONTACT_SUPPORT", "-", "-",
          N_("Invalid or corrupted Mpeg push buffer"), "Drv/SysMem/Bus/FB" },
        { 21, "ROBUST_CHANNEL_ME_ERROR_SW_METHOD", "Unused",
          "none", "CONTACT_SUPPORT", "-", "-",
          N_("Invalid or corrupted Motion Estimation push buffer"), "Drv/SysMem/Bus/FB" },
        { 22, "ROBUST_CHANNEL_VP_ERROR_SW_METHOD", "Unused",
          "none", "CONTACT_SUPPORT", "-", "-",
          N_("Invalid or corrupted Video Processor push buffer"), "Drv/SysMem/Bus/FB" },
        { 23, "ROBUST_CHANNEL_RC_LOGGING_ENABLED", "Unused",
          "none", "CONTACT_SUPPORT", "-", "-",
          "(same)", "-" },
        { 24, "ROBUST_CHANNEL_GR_SEMAPHORE_TIMEOUT", "Unused",
          "none", "CONTACT_SUPPORT", "-", "-",
          N_("GPU semaphore timeout"), "Drv/App/SysMem/Bus/Therm/FB" },
        { 25, "ROBUST_CHANNEL_GR_ILLEGAL_NOTIFY", N_("Invalid or illegal push buffer stream"),
          "A100,H100,B100,GB200", "RESTART_APP", "CHECK_APP/CUDA", "-",
          "(same)", "Drv/App/SysMem/Bus/FB" },
        { 26, "ROBUST_CHANNEL_FIFO_ERROR_FBISTATE_TIMEOUT", "Unused",
          "none", "CONTACT_SUPPORT", "-", "-",
          N_("Framebuffer timeout"), "Drv" },
        { 27, "ROBUST_CHANNEL_VP_ERROR", "Unused",
          "none", "CONTACT_SUPPORT", "-", "-",
          N_("Video processor exception"), "Drv" },
        { 28, "ROBUST_CHANNEL_VP2_ERROR", "Unused",
          "none", "CONTACT_SUPPORT", "-", "-",
          N_("Video processor exception"), "Drv" },
        { 29, "ROBUST_CHANNEL_BSP_ERROR", "Unused",
          "none", "CONTACT_SUPPORT", "-", "-",
          N_("Video processor exception"), "Drv" },
        { 30, "ROBUST_CHANNEL_BAD_ADDR_ACCESS", "Unused",
          "none", "CONTACT_SUPPORT", "-", "-",
          N_("GPU semaphore access error"), "Drv" },
        { 31, "ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT", N_("GPU memory page fault"),
          "A100,H100,B100,GB200", "RESTART_APP", "WORKFLOW_XID_31", "-",
          "(same)", "HW/Drv/App" },
        { 32, "ROBUST_CHANNEL_PBDMA_ERROR", N_("Invalid or corrupted push buffer stream"),
          "A100,H100,B100,GB200", "RESTART_APP", "CHECK_APP/CUDA", "-",
          "(same)", "Drv/SysMem/Bus/Therm/FB" },
        { 33, "ROBUST_CHANNEL_SEC_ERROR", "Unused",
          "none", "CONTACT_SUPPORT", "-", "-",
          N_("Internal micro-controller error"), "Drv" },
        { 34, "ROBUST_CHANNEL_MSVLD_ERROR", "Unused",
          "none", "CONTACT_SUPPORT", "-", "-",
          N_("Video processor exception"), "Drv" },
        { 35, "ROBUST_CHANNEL_MSPDEC_ERROR", "Unused",
          "none", "CONTACT_SUPPORT", "-", "-",
          N_("Video processor exception"), "Drv" },
        { 36, "ROBUST_CHANNEL_MSPPP_ERROR", "Unused",
          "none", "CONTACT_SUPPORT", "-", "-",
          N_("Video processor exception"), "Drv" },
        { 37, "ROBUST_CHANNEL_FECS_ERR_UNIMP_FIRMWARE_METHOD", N_("Driver firmware error"),
          "A100,H100,B100,GB200", "IGNORE", "CHECK_APP/CUDA", "-",
          "(same)", "Drv/SysMem/Bus" },
        { 38, "ROBUST_CHANNEL_FECS_ERR_WATCHDOG_TIMEOUT", N_("Driver firmware error"),
          "A100,H100,B100,GB200", "IGNORE", "CONTACT_SUPPORT", "-",
          "(same)", "Drv" },
        { 39, "ROBUST_CHANNEL_CE0_ERROR", N_("Copy Engine Exception"),
          "A100,H100,B100,GB200", "RESTART_APP", "CONTACT_SUPPORT", "-",
          N_("Unused"), "-" },
        { 40, "ROBUST_CHANNEL_CE1_ERROR", N_("Copy Engine Exception"),
          "A100,H100,B100,GB200", "RESTART_APP", "CONTACT_SUPPORT", "-",
          N_("Unused"), "-" },
        { 41, "ROBUST_CHANNEL_CE2_ERROR", N_("Copy Engine Exception"),
          "A100,H100,B100,GB200", "RESTART_APP", "CONTACT_SUPPORT", "-",
          N_("Unused"), "-" },
        { 42, "ROBUST_CHANNEL_VIC_ERROR", "Unused",
          "none", "CONTACT_SUPPORT", "-", "-",
          N_("Video processor exception"), "Drv" },
        { 43, "ROBUST_CHANNEL_RESETCHANNEL_VERIF_ERROR", N_("GPU stopped processing"),
          "A100,H100,B100,GB200", "IGNORE", "CONTACT_SUPPORT", "-",
          "(same)", "Drv/App" },
        { 44, "ROBUST_CHANNEL_GR_FAULT_DURING_CTXSW", N_("Graphics Engine fault during context switch"),
          "A100,H100,B100,GB200", "IGNORE", "CONTACT_SUPPORT", "-",
          "(same)", "Drv" },
        { 45, "ROBUST_CHANNEL_PREEMPTIVE_REMOVAL", N_("Preemptive cleanup, due to previous errors -- Most likely to see when running multiple cuda applications and hitting a DBE"),
          "A100,H100,B100,GB200", "WORKFLOW_XID_45", "Solo: RESTART_FM; Not Solo: IGNORE (follow other Xid)", "-",
          N_("Preemptive cleanup, due to previous errors – Most likely to see when running multiple cuda applications and hitting a DBE."), "Drv/App" },
        { 46, "ROBUST_CHANNEL_GPU_TIMEOUT_ERROR", N_("GPU stopped processing"),
          "A100,H100,B100,GB200", "RESET_GPU", "CONTACT_SUPPORT", "-",
          "(same)", "Drv" },
        { 47, "ROBUST_CHANNEL_NVENC0_ERROR", "Unused",
          "none", "CONTACT_SUPPORT", "-", "-",
          N_("Video processor exception"), "Drv" },
        { 48, "ROBUST_CHANNEL_GPU_ECC_DBE", N_("Double Bit ECC Error"),
          "A100,H100,B100,GB200", "WORKFLOW_XID_48", "WORKFLOW_XID_48", "CUDA 12.7; GPU driver R565",
          "(same)", "HW" },
        { 49, "SILENT_RUNNING_CONSTANT_LEVEL_SET_BY_REGISTRY", "Unused",
          "none", "CONTACT_SUPPORT", "-", "-",
          "(same)", "-" },
        { 50, "SILENT_RUNNING_LEVEL_TRANSITION_DUE_TO_RC_ERROR", "Unused",
          "none", "CONTACT_SUPPORT", "-", "-",
          "(same)", "-" },
        { 51, "SILENT_RUNNING_STRESS_TEST_FAILURE", "Unused",
          "none", "CONTACT_SUPPORT", "-", "-",
          "(same)", "-" },
        { 52, "SILENT_RUNNING_LEVEL_TRANS_DUE_TO_TEMP_RISE", "Unused",
          "none", "CONTACT_SUPPORT", "-", "-",
          "(same)", "-" },
        { 53, "SILENT_RUNNING_TEMP_REDUCED_CLOCKING", "Unused",
          "none", "CONTACT_SUPPORT", "-", "-",
          "(same)", "-" },
        { 54, "SILENT_RUNNING_PWR_REDUCED_CLOCKING", N_("Auxiliary power is not connected to the GPU board"),
          "A100,H100,B100", "CHECK_MECHANICALS", "CONTACT_SUPPORT", "-",
          "(same)", "-" },
        { 55, "SILENT_RUNNING_TEMPERATURE_READ_ERROR", "Unused",
          "none", "CONTACT_SUPPORT", "-", "-",
          "(same)", "-" },
        { 56, "DISPLAY_CHANNEL_EXCEPTION", "Unused",
          "none", "CONTACT_SUPPORT", "-", "-",
          N_("Display Engine error"), "HW/Drv" },
        { 57, "FB_LINK_TRAINING_FAILURE_ERROR", "Unused",
          "none", "CONTACT_SUPPORT", "-", "-",
          N_("Error programming video memory interface"), "HW/Drv/FB" },
        { 58, "FB_MEMORY_ERROR", "Unused",
          "none", "CONTACT_SUPPORT", "-", "-",
          N_("Unstable video memory interface detected"), "HW/Drv" },
        { 59, "PMU_ERROR", "Unused",
          "none", "CONTACT_SUPPORT", "-", "-",
          N_("Internal micro-controller error (older drivers)"), "Drv" },
        { 60, "ROBUST_CHANNEL_SEC2_ERROR", N_("Video processor exception"),
          "A100,H100,B100,GB200", "RESTART_APP", "INVESTIGATE_SW", "-",
          "(same)", "Drv" },
        { 61, "PMU_BREAKPOINT", "Unused",
          "none", "CONTACT_SUPPORT", "-", "-",
          N_("Internal micro-controller breakpoint/warning (newer drivers)"), "-" },
        { 62, "PMU_HALT_ERROR", N_("Internal micro-controller halt (newer drivers)"),
          "A100,H100,B100,GB200", "RESET_GPU", "CONTACT_SUPPORT", "CUDA 12.7; GPU driver R565",
          "(same)", "HW/Drv/Therm" },
        { 63, "INFOROM_DRAM_RETIREMENT_EVENT", N_("GPU memory remapping event"),
          "A100,H100,B100,GB200", "IGNORE", "IGNORE", "CUDA 12.7; GPU driver R565",
          N_("ECC page retirement or row remapping recording event"), "HW/Drv/FB" },
        { 64, "INFOROM_DRAM_RETIREMENT_FAILURE", N_("GPU memory remapping failure"),
          "A100,H100,B100,GB200", "RESET_GPU", "CONTACT_SUPPORT", "CUDA 12.7; GPU driver R565",
          N_("ECC page retirement or row remapper recording failure"), "HW/Drv" },
        { 65, "ROBUST_CHANNEL_NVENC1_ERROR", "Unused",
          "none", "CONTACT_SUPPORT", "-", "-",
          N_("Video processor exception"), "HW/Drv" },
        { 66, "ROBUST_CHANNEL_FECS_ERR_REG_ACCESS_VIOLATION", N_("Illegal access by driver"),
          "A100,H100,B100,GB200", "IGNORE", "INVESTIGATE_SW", "-",
          "(same)", "Drv/App" },
        { 67, "ROBUST_CHANNEL_FECS_ERR_VERIF_VIOLATION", N_("Illegal access by driver"),
          "A100,H100,B100,GB200", "IGNORE", "CONTACT_SUPPORT", "-",
          "(same)", "Drv/App" },
        { 68, "ROBUST_CHANNEL_NVDEC0_ERROR", N_("NVDEC0 Exception"),
          "A100,H100,B100,GB200", "RESTART_APP", "CONTACT_SUPPORT", "-",
          "(same)", "HW/Drv/App" },
        { 69, "ROBUST_CHANNEL_GR_CLASS_ERROR", N_("Graphics Engine class error"),
          "A100,H100,B100,GB200", "RESTART_APP", "CHECK_APP/CUDA", "-",
          "(same)", "HW/Drv" },
        { 70, "ROBUST_CHANNEL_CE3_ERROR", N_("CE3: Unknown Error"),
          "A100,H100,B100,GB200", "RESTART_APP", "CONTACT_SUPPORT", "-",
          "(same)", "HW/Drv" },
        { 71, "ROBUST_CHANNEL_CE4_ERROR", N_("CE4: Unknown Error"),
          "A100,H100,B100,GB200", "RESTART_APP", "CONTACT_SUPPORT", "-",
          "(same)", "HW/Drv" },
        { 72, "ROBUST_CHANNEL_CE5_ERROR", N_("CE5: Unknown Error"),
          "A100,H100,B100,GB200", "RESTART_APP", "CONTACT_SUPPORT", "-",
          "(same)", "HW/Drv" },
        { 73, "ROBUST_CHANNEL_NVENC2_ERROR", "Unused",
          "none", "CONTACT_SUPPORT", "-", "-",
          N_("NVENC2 Error"), "HW/Drv" },
        { 74, "NVLINK_ERROR", N_("NVLINK Error"),
          "A100,H100", "WORKFLOW_NVLINK_ERR", "CONTACT_SUPPORT", "CUDA 12.7; GPU driver R565",
          "(same)", "HW/Drv/Bus" },
        { 75, "ROBUST_CHANNEL_CE6_ERROR", N_("CE6: Unknown Error"),
          "A100,H100,B100,GB200", "RESTART_APP", "CONTACT_SUPPORT", "-",
          "(same)", "HW/Drv" },
        { 76, "ROBUST_CHANNEL_CE7_ERROR", N_("CE7: Unknown Error"),
          "A100,H100,B100,GB200", "RESTART_APP", "CONTACT_SUPPORT", "-",
          "(same)", "HW/Drv" },
        { 77, "ROBUST_CHANNEL_CE8_ERROR", N_("CE8: Unknown Error"),
          "A100,H100,B100,GB200", "RESTART_APP", "CONTACT_SUPPORT", "-",
          "(same)", "HW/Drv" },
        { 78, "VGPU_START_ERROR", N_("vGPU Start Error"),
          "A100,H100,B100,GB200", "UPDATE_SWFW", "UPDATE_SWFW", "-",
          "(same)", "Drv" },
        { 79, "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS", N_("GPU has fallen off the bus"),
          "A100,H100,B100,GB200", "RESTART_BM", "CONTACT_SUPPORT", "CUDA 12.7; GPU driver R565",
          "(same)", "HW/Drv/SysMem/Bus/Therm" },
        { 80, "PBDMA_PUSHBUFFER_CRC_MISMATCH", N_("Corrupted data sent to GPU"),
          "A100,H100", "RESTART_APP", "CHECK_APP/CUDA", "-",
          "(same)", "HW/Drv/SysMem/Bus/FB" },
        { 81, "ROBUST_CHANNEL_VGA_SUBSYSTEM_ERROR", "Unused",
          "none", "CONTACT_SUPPORT", "-", "-",
          N_("VGA Subsystem Error"), "HW" },
        { 82, "ROBUST_CHANNEL_NVJPG0_ERROR", N_("NVJPG0 Error"),
          "A100,H100,B100,GB200", "RESTART_APP", "CONTACT_SUPPORT", "-",
          "(same)", "HW/Drv" },
        { 83, "ROBUST_CHANNEL_NVDEC1_ERROR", N_("NVDEC1 Error"),
          "A100,H100,B100,GB200", "RESTART_APP", "CONTACT_SUPPORT", "-",
          "(same)", "HW/Drv" },
        { 84, "ROBUST_CHANNEL_NVDEC2_ERROR", N_("NVDEC2 Error"),
          "A100,H100,B100,GB200", "RESTART_APP", "CONTACT_SUPPORT", "-",
          "(same)", "HW/Drv" },
        { 85, "ROBUST_CHANNEL_CE9_ERROR", N_("CE9: Unknown Error"),
          "A100,H100,B100,GB200", "RESTART_APP", "CONTACT_SUPPORT", "-",
          "(same)", "HW/Drv" },
        { 86, "ROBUST_CHANNEL_OFA0_ERROR", N_("OFA Exception"),
          "A100,H100,B100,GB200", "RESTART_APP", "CONTACT_SUPPORT", "-",
          "(same)", "HW/Drv" },
        { 87, "NVTELEMETRY_DRIVER_REPORT", "Unused",
          "none", "CONTACT_SUPPORT", "-", "-",
          N_("Reserved"), "-" },
        { 88, "ROBUST_CHANNEL_NVDEC3_ERROR", N_("NVDEC3 Error"),
          "A100,H100,B100,GB200", "RESTART_APP", "CONTACT_SUPPORT", "-",
          "(same)", "HW/Drv" },
        { 89, "ROBUST_CHANNEL_NVDEC4_ERROR", N_("NVDEC4 Error"),
          "A100,H100,B100,GB200", "RESTART_APP", "CONTACT_SUPPORT", "-",
          "(same)", "HW/Drv" },
        { 90, "LTC_ERROR", "Unused",
          "none", "CONTACT_SUPPORT", "-", "-",
          N_("Reserved"), "-" },
        { 91, "RESERVED_XID", "Unused",
          "none", "CONTACT_SUPPORT", "-", "-",
          N_("Reserved"), "-" },
        { 92, "EXCESSIVE_SBE_INTERRUPTS", N_("High single-bit ECC error rate"),
          "A100,H100,B100,GB200", "IGNORE", "CONTACT_SUPPORT", "-",
          "(same)", "HW/Drv" },
        { 93, "INFOROM_ERASE_LIMIT_EXCEEDED", N_("Non-fatal violation of provisioned InfoROM wear limit"),
          "A100", "IGNORE", "CONTACT_SUPPORT", "-",
          "(same)", "Drv/App" },
        { 94, "ROBUST_CHANNEL_CONTAINED_ERROR", N_("Contained memory error"),
          "A100,H100,B100,GB200", "RESTART_APP", "IGNORE (sympathetic)", "CUDA 12.7; GPU driver R565",
          N_("Contained ECC error"), "HW/Drv/FB" },
        { 95, "ROBUST_CHANNEL_UNCONTAINED_ERROR", N_("Uncontained memory error"),
          "A100,H100,B100,GB200", "RESET_GPU", "IGNORE (sympathetic)", "CUDA 12.7; GPU driver R565",
          N_("Uncontained ECC error"), "HW/Drv/FB" },
        { 96, "ROBUST_CHANNEL_NVDEC5_ERROR", N_("NVDEC5 Error"),
          "H100,B100,GB200", "RESTART_APP", "CONTACT_SUPPORT", "-",
          "(same)", "HW/Drv" },
        { 97, "ROBUST_CHANNEL_NVDEC6_ERROR", N_("NVDEC6 Error"),
          "H100,B100,GB200", "RESTART_APP", "CONTACT_SUPPORT", "-",
          "(same)", "HW/Drv" },
        { 98, "ROBUST_CHANNEL_NVDEC7_ERROR", N_("NVDEC7 Error"),
          "H100,B100,GB200", "RESTART_APP", "CONTACT_SUPPORT", "-",
          "(same)", "HW/Drv" },
        { 99, "ROBUST_CHANNEL_NVJPG1_ERROR", N_("NVJPG1 Error"),
          "H100,B100,GB200", "RESTART_APP", "CONTACT_SUPPORT", "-",
          "(same)", "HW/Drv" },
        { 100, "ROBUST_CHANNEL_NVJPG2_ERROR", N_("NVJPG2 Error"),
          "H100,B100,GB200", "RESTART_APP", "CONTACT_SUPPORT", "-",
          "(same)", "HW/Drv" },
        { 101, "ROBUST_CHANNEL_NVJPG3_ERROR", N_("NVJPG3 Error"),
          "H100,B100,GB200", "RESTART_APP", "CONTACT_SUPPORT", "-",
          "(same)", "HW/Drv" },
        { 102, "ROBUST_CHANNEL_NVJPG4_ERROR", N_("NVJPG4 Error"),
          "H100,B100,GB200", "RESTART_APP", "CONTACT_SUPPORT", "-",
          "(same)", "HW/Drv" },
        { 103, "ROBUST_CHANNEL_NVJPG5_ERROR", N_("NVJPG5 Error"),
          "H100,B100,GB200", "RESTART_APP", "CONTACT_SUPPORT", "-",
          "(same)", "HW/Drv" },
        { 104, "ROBUST_CHANNEL_NVJPG6_ERROR", N_("NVJPG6 Error"),
          "H100,B100,GB200", "RESTART_APP", "CONTACT_SUPPORT", "-",
          "(same)", "HW/Drv" },
        { 105, "ROBUST_CHANNEL_NVJPG7_ERROR", N_("NVJPG7 Error"),
          "H100,B100,GB200", "RESTART_APP", "CONTACT_SUPPORT", "-",
          "(same)", "HW/Drv" },
        { 106, "SMBPBI_TEST_MESSAGE", N_("SMBPBI Test Message"),
          "A100,H100,B100,GB200", "IGNORE", "IGNORE", "-",
          "(same)", "App" },
        { 107, "SMBPBI_TEST_MESSAGE_SILENT", N_("SMBPBI Test Message Silent"),
          "A100,H100,B100,GB200", "IGNORE", "IGNORE", "-",
          "(same)", "App" },
        { 108, "NVLINK_REMOTE_TRANSLATION_ERROR", "Unused",
          "A100,H100,B100,GB200", "IGNORE", "XID_137_FLOW", "-",
          N_("Reserved"), "-" },
        { 109, "ROBUST_CHANNEL_CTXSW_TIMEOUT_ERROR", N_("Context Switch Timeout Error"),
          "A100,H100,B100,GB200", "RESET_GPU", "CONTACT_SUPPORT", "CUDA 12.7; GPU driver R570",
          "(same)", "HW/Drv/App/SysMem/Bus/Therm/FB" },
        { 110, "SEC_FAULT_ERROR", N_("Security Fault Error"),
          "H100,B100,GB200", "RESET_GPU", "INVESTIGATE_SW", "CUDA 12.7; GPU driver R565",
          "(same)", "HW" },
        { 111, "BUNDLE_ERROR_EVENT", "Unused",
          "none", "CONTACT_SUPPORT", "-", "-",
          N_("Display Bundle Error Event"), "HW/Drv/Bus" },
        { 112, "DISP_SUPERVISOR_ERROR", "Unused",
          "none", "CONTACT_SUPPORT", "-", "-",
          N_("Display Supervisor Error"), "HW/Drv" },
        { 113, "DP_LT_FAILURE", "Unused",
          "none", "CONTACT_SUPPORT", "-", "-",
          N_("DP Link Training Erro"), "HW/Drv" },
        { 114, "HEAD_RG_UNDERFLOW", "Unused",
          "none", "CONTACT_SUPPORT", "-", "-",
          N_("Display Pipeline Underflow Error"), "HW/Drv/FB" },
        { 115, "CORE_CHANNEL_REGS", "Unused",
          "none", "CONTACT_SUPPORT", "-", "-",
          N_("Display Core Channel Error"), "HW/Drv" },
        { 116, "WINDOW_CHANNEL_REGS", "Unused",
          "none", "CONTACT_SUPPORT", "-", "-",
          N_("Display Window Channel Error"), "HW/Drv" },
        { 117, "CURSOR_CHANNEL_REGS", "Unused",
          "none", "CONTACT_SUPPORT", "-", "-",
          N_("Display Cursor Channel Error"), "HW/Drv" },
        { 118, "HEAD_REGS", "Unused",
          "none", "CONTACT_SUPPORT", "-", "-",
          N_("Display Pixel Pipeline Error"), "HW/Drv" },
        { 119, "GSP_RPC_TIMEOUT", N_("GSP RPC Timeout"),
          "A100,H100,B100,GB200", "RESET_GPU", "INVESTIGATE_SW", "-",
          "(same)", "HW/Drv/SysMem/Bus/Therm/FB" },
        { 120, "GSP_ERROR", N_("GSP Error"),
          "A100,H100,B100,GB200", "RESET_GPU", "INVESTIGATE_SW", "CUDA 12.7; GPU driver R565",
          "(same)", "HW/Drv/SysMem/Bus/Therm/FB" },
        { 121, "C2C_ERROR", N_("C2C Error"),
          "GB200", "IGNORE", "CONTACT_SUPPORT", "-",
          N_("C2C Link Error"), "HW/Bus" },
        { 122, "SPI_PMU_RPC_READ_FAIL", "Unused",
          "none", "CONTACT_SUPPORT", "-", "-",
          N_("SPI PMU RPC Read Failure"), "HW/Drv" },
        { 123, "SPI_PMU_RPC_WRITE_FAIL", "Unused",
          "none", "CONTACT_SUPPORT", "-", "-",
          N_("SPI PMU RPC Write Failure"), "HW/Drv" },
        { 124, "SPI_PMU_RPC_ERASE_FAIL", "Unused",
          "none", "CONTACT_SUPPORT", "-", "-",
          N_("SPI PMU RPC Erase Failure"), "HW/Drv" },
        { 125, "INFOROM_FS_ERROR", "Unused",
          "none", "CONTACT_SUPPORT", "-", "-",
          N_("Inforom FS Failure"), "HW/Drv" },
        { 126, "ROBUST_CHANNEL_CE10_ERROR", N_("CE10: Unknown Error"),
          "B100,GB200", "RESTART_APP", "CONTACT_SUPPORT", "-",
          N_("Reserved"), "-" },
        { 127, "ROBUST_CHANNEL_CE11_ERROR", N_("CE11: Unknown Error"),
          "B100,GB200", "RESTART_APP", "CONTACT_SUPPORT", "-",
          N_("Reserved"), "-" },
        { 128, "ROBUST_CHANNEL_CE12_ERROR", N_("CE12: Unknown Error"),
          "B100,GB200", "RESTART_APP", "CONTACT_SUPPORT", "-",
          N_("Reserved"), "-" },
        { 129, "ROBUST_CHANNEL_CE13_ERROR", N_("CE13: Unknown Error"),
          "B100,GB200", "RESTART_APP", "CONTACT_SUPPORT", "-",
          N_("Reserved"), "-" },
        { 130, "ROBUST_CHANNEL_CE14_ERROR", N_("CE14: Unknown Error"),
          "B100,GB200", "RESTART_APP", "CONTACT_SUPPORT", "-",
          N_("Reserved"), "-" },
        { 131, "ROBUST_CHANNEL_CE15_ERROR", N_("CE15: Unknown Error"),
          "B100,GB200", "RESTART_APP", "CONTACT_SUPPORT", "-",
          N_("Reserved"), "-" },
        { 132, "ROBUST_CHANNEL_CE16_ERROR", N_("CE16: Unknown Error"),
          "B100,GB200", "RESTART_APP", "CONTACT_SUPPORT", "-",
          N_("Reserved"), "-" },
        { 133, "ROBUST_CHANNEL_CE17_ERROR", N_("CE17: Unknown Error"),
          "B100,GB200", "RESTART_APP", "CONTACT_SUPPORT", "-",
          "-", "-" },
        { 134, "ROBUST_CHANNEL_CE18_ERROR", N_("CE18: Unknown Error"),
          "B100,GB200", "RESTART_APP", "CONTACT_SUPPORT", "-",
          N_("Reserved"), "-" },
        { 135, "ROBUST_CHANNEL_CE19_ERROR", N_("CE19: Unknown Error"),
          "B100,GB200", "RESTART_APP", "CONTACT_SUPPORT", "-",
          N_("Reserved"), "-" },
        { 136, "ALI_TRAINING_FAIL", N_("Link Training Failed"),
          "H100", "RESET_GPU", "INVESTIGATE_LINK_SI", "CUDA 12.7; GPU driver R565",
          N_("Reserved"), "-" },
        { 137, "NVLINK_PRIV_ERR", N_("NVLink Privilege Error"),
          "A100,H100,B100,GB200", "IGNORE", "XID_137_FLOW", "-",
          N_("NVLink FLA privilege error"), "App" },
        { 138, "ROBUST_CHANNEL_DLA_ERROR", "Unused",
          "none", "CONTACT_SUPPORT", "-", "-",
          N_("Reserved"), "-" },
        { 139, "ROBUST_CHANNEL_OFA1_ERROR", N_("OFA1 Error"),
          "B100,GB200", "RESTART_APP", "CONTACT_SUPPORT", "-",
          N_("Reserved"), "-" },
        { 140, "UNRECOVERABLE_ECC_ERROR_ESCAPE", N_("ECC Unrecovered Error"),
          "A100,H100,B100,GB200", "RESET_GPU", "CONTACT_SUPPORT", "-",
          N_("Unrecovered ECC Error"), "HW/Drv/FB" },
        { 141, "ROBUST_CHANNEL_FAST_PATH_ERROR", N_("CUDA Fast Path Error"),
          "H100,B100,GB200", "IGNORE", "CONTACT_SUPPORT", "-",
          N_("Reserved"), "-" },
        { 142, "ROBUST_CHANNEL_NVENC3_ERROR", N_("NVENC3 Error"),
          "GB200", "CONTACT_SUPPORT", "-", "-",
          N_("Unrecovered ECC Error"), "-" },
        { 143, "GPU_INIT_ERROR", N_("GPU Initialization Error"),
          "H100,B100,GB200", "RESET_GPU", "CONTACT_SUPPORT", "CUDA 12.9; GPU driver R575",
          N_("GPU Initialization Failure"), "HW/Drv/FB" },
        { 144, "NVLINK_SAW_ERROR", N_("NVLINK: SAW Error"),
          "B100,GB200", "WORKFLOW_NVLINK5_ERR", "WORKFLOW_NVLINK5_ERR", "CUDA 12.7; GPU driver R565",
          "-", "-" },
        { 145, "NVLINK_RLW_ERROR", N_("NVLINK: RLW Error"),
          "B100,GB200", "WORKFLOW_NVLINK5_ERR", "WORKFLOW_NVLINK5_ERR", "CUDA 12.7; GPU driver R565",
          "-", "-" },
        { 146, "NVLINK_TLW_ERROR", N_("NVLINK: TLW Error"),
          "B100,GB200", "WORKFLOW_NVLINK5_ERR", "WORKFLOW_NVLINK5_ERR", "CUDA 12.7; GPU driver R565",
          "-", "-" },
        { 147, "NVLINK_TREX_ERROR", N_("NVLINK: TREX Error"),
          "B100,GB200", "WORKFLOW_NVLINK5_ERR", "WORKFLOW_NVLINK5_ERR", "CUDA 12.7; GPU driver R565",
          "-", "-" },
        { 148, "NVLINK_NVLPW_CTRL_ERROR", N_("NVLINK: NVLPW_CTRL Error"),
          "B100,GB200", "WORKFLOW_NVLINK5_ERR", "WORKFLOW_NVLINK5_ERR", "CUDA 12.7; GPU driver R565",
          "-", "-" },
        { 149, "NVLINK_NETIR_ERROR", N_("NVLINK: NETIR Error"),
          "B100,GB200", "WORKFLOW_NVLINK5_ERR", "WORKFLOW_NVLINK5_ERR", "CUDA 12.7; GPU driver R565",
          "-", "-" },
        { 150, "NVLINK_MSE_ERROR", N_("NVLINK: MSE Error"),
          "B100,GB200", "WORKFLOW_NVLINK5_ERR", "WORKFLOW_NVLINK5_ERR", "CUDA 12.7; GPU driver R565",
          "-", "-" },
        { 151, "ROBUST_CHANNEL_KEY_ROTATION_ERROR", N_("Key rotation Error"),
          "H100,B100,GB200", "RESTART_VM", "CONTACT_SUPPORT", "-",
          "-", "-" },
        { 152, "ROBUST_CHANNEL_DLA_SMMU_ERROR", N_("DLA SMMU Error"),
          "none", "IGNORE", "CONTACT_SUPPORT", "-",
          "-", "-" },
        { 153, "ROBUST_CHANNEL_DLA_TIMEOUT", N_("DLA timeout Error"),
          "none", "IGNORE", "CONTACT_SUPPORT", "-",
          "-", "-" },
        { 154, "GPU_RECOVERY_ACTION_CHANGED", N_("GPU Recovery Action Changed"),
          "A100,H100,B100,GB200", "XID_154", "N/A Informational only regarding another Xid", "-",
          "-", "-" },
        { 155, "NVLINK_SW_DEFINED_ERROR", N_("NVLINK: SW Defined Error"),
          "B100,GB200", "RESET_GPU", "INVESTIGATE_SW_USER", "CUDA 12.7; GPU driver R565",
          "-", "-" },
        { 156, "RESOURCE_RETIREMENT_EVENT", N_("Resource Retirement Event"),
          "H100,B100,GB200", "RESET_GPU", "IGNORE", "CUDA 12.7; GPU driver R565",
          "-", "-" },
        { 157, "RESOURCE_RETIREMENT_FAILURE", N_("Resource Retirement Failure"),
          "H100,B100,GB200", "IGNORE", "CONTACT_SUPPORT", "-",
          "-", "-" },
        { 158, "GPU_FATAL_TIMEOUT", N_("GPU Fatal Timeout"),
          "A100,H100,B100,GB200", "RESET_GPU", "CONTACT_SUPPORT", "yes; support with Xid introduction",
          "-", "-" },
        { 159, "ROBUST_CHANNEL_CHI_NON_DATA_ERROR", N_("CHI Non-Data Error"),
          "B100,GB200", "CHECK_UVM", "SYMPATHETIC_REPORT_SOLO", "yes; support with Xid introduction",
          "-", "-" },
        { 160, "CHANNEL_RETIREMENT_EVENT", N_("Channel Retirement Event"),
          "B100,GB200", "IGNORE", "INVESTIGATE_SW", "CUDA 12.9; GPU driver R575",
          "-", "-" },
        { 161, "CHANNEL_RETIREMENT_FAILURE", N_("Channel Retirement Failure"),
          "B100,GB200", "IGNORE", "INVESTIGATE_SW", "CUDA 12.9; GPU driver R575",
          "-", "-" },
        { 162, "PSHC_REENGAGED", N_("Power Smoothing HW Circuitry capability reengaged"),
          "B100,GB200", "-", "-", "-",
          "-", "-" },
        { 163, "PSHC_DISENGAGED", N_("Power Smoothing HW Circuitry capability disengaged"),
          "B100,GB200", "-", "-", "-",
          "-", "-" },
        { 164, "PSHC_LOW_LIFETIME", N_("Power Smoothing HW Circuitry low lifetime reached"),
          "B100,GB200", "-", "-", "-",
          "-", "-" },
        { 165, "PSHC_ZERO_LIFETIME", N_("Power Smoothing HW Circuitry lifetime exhausted"),
          "B100,GB200", "-", "-", "-",
          "-", "-" },
        { 166, "NVLINK_SECURE_CRYPTO_ERR", N_("CC traffic seen prior to link properly being configured for encrypted traffic"),
          "B100,GB200", "-", "-", "-",
          "-", "-" },
        { 167, "PCIE_FATAL_TIMEOUT", N_("PCIE_FATAL_TIMEOUT"),
          "H100,B100,GB200", "-", "-", "-",
          "-", "-" },
        { 168, "REDUCED_GPU_MEMORY_CAPACITY", N_("Errors found in WPR (write protected region)"),
          "A100,H100,B100,GB200", "-", "-", "-",
          "-", "-" },
        { 169, "SEC2_HALT_ERROR", N_("Internal micro-controller halt"),
          "H100,B100,GB200", "-", "-", "-",
          "-", "-" },
        { 170, "NVLINK_SECURE_OTHER", N_("Interrupt seen in CC mode"),
          "B100,GB200", "-", "-", "-",
          "-", "-" },
        { 171, "UNCORRECTABLE_DRAM_ERROR", N_("Additional to Xid 48 providing more details on particulars of fault to differentiate DRAM/SRAM"),
          "A100,H100,B100,GB200", "-", "-", "-",
          "-", "-" },
        { 172, "UNCORRECTABLE_SRAM_ERROR", N_("Additional to Xid 48 providing more details on particulars of fault to differentiate DRAM/SRAM"),
          "A100,H100,B100,GB200", "-", "-", "-",
          "-", "-" },
};

/* Detail for the commonly seen codes (reference section 1), in words for operators. */
struct xid_detail {
        unsigned first, last;   /* code range (144-150 share one entry) */
        const char *name;
        const char *meaning;
        const char *cause;
        const char *todo;
        const char *note;       /* ghostvram-specific */
        enum xid_severity severity;
        enum xid_action action;
        enum xid_reset reset;
};

#define NOTE_STUCK                                                                                       \
        N_("Evidence for a task stuck in the driver: processes calling into this GPU can hang (D state) and " \
        "their memory is not released until the GPU is reset. The pid= on an Xid 119 line is whoever "   \
        "made the call that timed out (often a monitor such as nvidia-smi or a DCGM exporter), not "      \
        "necessarily the culprit.")

static const struct xid_detail xid_details[] = {
        { 8, 8, N_("GPU stopped processing"),
          N_("A channel hit the idle timeout: the GPU stopped making progress (usually announced by the RC "
          "watchdog line 'GPU is probably locked!')."),
          N_("Driver or application problem; sometimes the bus or overheating."),
          N_("Restart the application. If it repeats on the same GPU, collect nvidia-bug-report.sh and contact support."),
          NULL, XID_SEV_WARNING, XID_ACT_RESTART_APP, XID_RESET_NO },
        { 13, 13, N_("Graphics engine exception"),
          N_("A GPU program faulted: typically an out-of-bounds access, or an illegal instruction or register."),
          N_("Usually a bug in the application (its CUDA kernels); in rare cases hardware or system software."),
          N_("Restart the application; debug it with compute-sanitizer (memcheck) or cuda-gdb "
          "(CUDA_DEVICE_WAITS_ON_EXCEPTION=1). If it repeats on the same GPU/GPC/TPC across applications, "
          "run DCGM diagnostics."),
          NULL, XID_SEV_WARNING, XID_ACT_RESTART_APP, XID_RESET_NO },
        { 31, 31, N_("GPU memory page fault"),
          N_("The GPU's MMU reported an illegal address access (an MMU fault)."),
          N_("Typically an application bug (bad pointer, use after free); can also be a driver or hardware bug."),
          N_("Restart the application; debug it with compute-sanitizer. Repeated faults on the same GPU "
          "across jobs: run DCGM diagnostics / field diagnostics."),
          NULL, XID_SEV_WARNING, XID_ACT_RESTART_APP, XID_RESET_NO },
        { 32, 32, N_("Invalid or corrupted push buffer stream"),
          N_("The GPU's DMA controller (PBDMA) received corrupted data over PCI Express."),
          N_("Mostly PCIe link quality (slot, riser, cable), rarely the application."),
          N_("Restart the application; if it repeats, check the PCIe link (AER errors in the kernel log, "
          "lspci -vv) and the board's seating."),
          NULL, XID_SEV_WARNING, XID_ACT_RESTART_APP, XID_RESET_NO },
        { 38, 38, N_("Driver firmware error"),
          N_("A firmware watchdog of the graphics engine (FECS) timed out."),
          N_("Driver or firmware."),
          N_("No action by itself; contact support if it repeats."),
          NULL, XID_SEV_INFO, XID_ACT_NONE, XID_RESET_NO },
        { 43, 43, N_("GPU stopped processing (application fault)"),
          N_("The application hit a software-induced fault and had to terminate; the GPU stays healthy."),
          N_("The user application (or the driver)."),
          N_("Nothing for the GPU; restart the application. Contact support only if it is unexpected."),
          NULL, XID_SEV_INFO, XID_ACT_NONE, XID_RESET_NO },
        { 45, 45, N_("Preemptive cleanup"),
          N_("The driver tore down an application's GPU channels: the application was ending (Ctrl-C, "
          "SIGKILL, a GPU reset) or an earlier error forced it (with Xid 94/95; from R575 the line "
          "says 'caused by previous Xid N')."),
          N_("The application ended or was killed, or another Xid just before."),
          N_("Alone: nothing for the GPU (on NVSwitch systems NVIDIA suggests restarting the fabric "
          "manager if it comes solo, without any job ending). After another Xid: follow that Xid's guidance."),
          N_("Routine when a job is killed: it confirms that the GPU owner died. If the memory stays used "
          "afterwards, something else still holds it (forked workers that inherited the device files): "
          "run 'ghostvram scan'."),
          XID_SEV_INFO, XID_ACT_FOLLOW_OTHER, XID_RESET_NO },
        { 48, 48, N_("Double-bit ECC error"),
          N_("An uncorrectable (double-bit) ECC error occurred in GPU memory; the application that hit it "
          "is told as well."),
          N_("Hardware: failing GPU memory (DRAM) or on-chip SRAM; Xid 171/172 say which."),
          N_("Reset the GPU (or reboot) to clear it; with Xid 63/64 as well, drain the node and reset. If it "
          "repeats, run field diagnostics and check the remapping counters (nvidia-smi -q -d ROW_REMAPPER)."),
          NULL, XID_SEV_ERROR, XID_ACT_RESET_GPU, XID_RESET_GPU },
        { 61, 61, N_("Internal micro-controller breakpoint/warning"),
          N_("The PMU micro-controller hit a breakpoint or warning (newer drivers)."),
          N_("Driver or firmware; NVIDIA lists it as unused on current data-center GPUs."),
          N_("Contact support if you see it."),
          NULL, XID_SEV_WARNING, XID_ACT_CONTACT_SUPPORT, XID_RESET_UNKNOWN },
        { 62, 62, N_("Internal micro-controller halt"),
          N_("The PMU micro-controller halted."),
          N_("Hardware, driver or overheating. R590+ drivers log a GSP 'PMU halted' event and Xid 154 "
          "'GPU Reset Required' after it."),
          N_("Reset the GPU; contact support if it repeats."),
          NULL, XID_SEV_ERROR, XID_ACT_RESET_GPU, XID_RESET_GPU },
        { 63, 63, N_("Memory row remapping / page retirement event"),
          N_("A bad GPU memory row was marked for remapping (A100 and newer: 'Row Remapper: New row marked "
          "for remapping, reset gpu to activate.') or a page for retirement (older GPUs)."),
          N_("Hardware: an ECC error in GPU memory that the GPU can repair."),
          N_("No immediate action; the remapping takes effect at the next GPU reset (older GPUs: reboot), "
          "so reset when convenient."),
          NULL, XID_SEV_WARNING, XID_ACT_NONE, XID_RESET_WHEN_CONVENIENT },
        { 64, 64, N_("Memory row remapping / page retirement failure"),
          N_("Recording a row remapping or page retirement failed."),
          N_("Hardware: no spare rows left or an InfoROM write failure; a row-remapping failure is an RMA criterion."),
          N_("Reset the GPU; if it persists, contact your hardware vendor (RMA)."),
          NULL, XID_SEV_ERROR, XID_ACT_RESET_GPU, XID_RESET_GPU },
        { 68, 68, N_("Video decoder (NVDEC0) exception"),
          N_("The video decoder engine raised an exception."),
          N_("Hardware, driver or the application's video stream."),
          N_("Restart the application; contact support if it repeats."),
          NULL, XID_SEV_WARNING, XID_ACT_RESTART_APP, XID_RESET_NO },
        { 69, 69, N_("Graphics engine class error"),
          N_("The graphics engine received bad method/class data from a client."),
          N_("Application or driver bug; rarely hardware."),
          N_("Restart the application and check its CUDA/graphics code."),
          NULL, XID_SEV_WARNING, XID_ACT_RESTART_APP, XID_RESET_NO },
        { 74, 74, N_("NVLink error"),
          N_("A problem on an NVLink connection from this GPU to another GPU or an NVSwitch."),
          N_("Hardware: the link, this GPU, or the device at the remote end."),
          N_("Reset the GPU or reboot to clear it; decode the seven registers in the message (NVIDIA's "
          "WORKFLOW_NVLINK_ERR) and contact support."),
          NULL, XID_SEV_ERROR, XID_ACT_RESET_GPU, XID_RESET_GPU },
        { 79, 79, N_("GPU has fallen off the bus"),
          N_("The driver can no longer reach the GPU over PCI Express: the GPU is lost."),
          N_("Usually hardware: the PCIe link, power delivery, overheating or a failing GPU; sometimes a driver problem."),
          N_("Reboot the machine; a GPU reset cannot bring the GPU back. If it repeats, check power, cooling, "
          "seating and the PCIe slot, and contact support."),
          N_("GPU lost: NVML answers GPU_IS_LOST and memory 'used' on it cannot be freed by killing "
          "processes; reboot, do not reset. An Xid 79 from before the current driver load is history, "
          "not the present state."),
          XID_SEV_CRITICAL, XID_ACT_REBOOT, XID_RESET_REBOOT },
        { 92, 92, N_("High single-bit ECC error rate"),
          N_("Many corrected (single-bit) ECC errors."),
          N_("Hardware: GPU memory."),
          N_("Nothing needed now; contact support if it continues."),
          NULL, XID_SEV_WARNING, XID_ACT_NONE, XID_RESET_NO },
        { 94, 94, N_("Contained memory error"),
          N_("An uncorrectable memory (ECC) error was contained to one application, which must restart; "
          "all other applications are unaffected."),
          N_("Hardware: an uncorrectable memory error."),
          N_("Restart the affected application; reset the GPU when convenient. An Xid 45 for that "
          "application is expected."),
          NULL, XID_SEV_WARNING, XID_ACT_RESTART_APP, XID_RESET_WHEN_CONVENIENT },
        { 95, 95, N_("Uncontained memory error"),
          N_("An uncorrectable memory (ECC) error could not be contained and may affect several applications."),
          N_("Hardware: an uncorrectable memory error."),
          N_("Reset the GPU before restarting applications on it."),
          NULL, XID_SEV_ERROR, XID_ACT_RESET_GPU, XID_RESET_GPU },
        { 109, 109, N_("Context switch timeout"),
          N_("An engine failed to switch contexts in time."),
          N_("Any of hardware, driver, application, bus, overheating."),
          N_("Reset the GPU; contact support if it repeats."),
          NULL, XID_SEV_ERROR, XID_ACT_RESET_GPU, XID_RESET_GPU },
        { 110, 110, N_("Security fault"),
          N_("The GPU reported a security fault."),
          N_("Should be uncommon unless there is a hardware failure."),
          N_("Reset the GPU (NVIDIA suggests a cold reset of the system); investigate software if it repeats."),
          NULL, XID_SEV_ERROR, XID_ACT_RESET_GPU, XID_RESET_GPU },
        { 119, 119, N_("GSP RPC timeout"),
          N_("The GPU System Processor (GSP) did not answer a driver call (RPC) in time."),
          N_("A GSP firmware or driver hang, or failing hardware."),
          N_("Reset the GPU, or power-cycle the node if it persists; until then processes using the GPU may hang."),
          NOTE_STUCK, XID_SEV_ERROR, XID_ACT_RESET_GPU, XID_RESET_GPU },
        { 120, 120, N_("GSP error"),
          N_("Code running on the GPU System Processor (GSP) failed (a task exception or panic)."),
          N_("GSP firmware or driver bug, or failing hardware."),
          N_("Reset the GPU, or power-cycle the node if it persists; until then processes using the GPU may hang."),
          NOTE_STUCK, XID_SEV_ERROR, XID_ACT_RESET_GPU, XID_RESET_GPU },
        { 121, 121, N_("C2C link error"),
          N_("Corrected errors on the NVLink-C2C connection to a Grace CPU (GB200); no operational impact."),
          N_("Hardware: the C2C link."),
          N_("Nothing now; resetting the GPU at a service window lets it retrain the link."),
          NULL, XID_SEV_INFO, XID_ACT_NONE, XID_RESET_WHEN_CONVENIENT },
        { 137, 137, N_("NVLink privilege error"),
          N_("The remote MMU reported a fault, such as an illegal NVLink peer-to-peer access."),
          N_("Typically an application bug."),
          N_("Nothing for the GPU; check the application (NVIDIA's XID_137_FLOW)."),
          NULL, XID_SEV_WARNING, XID_ACT_CHECK_APP, XID_RESET_NO },
        { 140, 140, N_("ECC unrecovered error"),
          N_("Uncorrectable memory errors interrupted the driver's ability to mark pages for offlining or "
          "rows for remapping."),
          N_("Hardware: GPU memory."),
          N_("Reset the GPU; if the problem persists, contact your hardware vendor."),
          NULL, XID_SEV_ERROR, XID_ACT_RESET_GPU, XID_RESET_GPU },
        { 143, 143, N_("GPU initialization error"),
          N_("The GPU failed to initialize."),
          N_("Hardware, driver or memory."),
          N_("Reset the GPU; contact support if it persists."),
          NULL, XID_SEV_ERROR, XID_ACT_RESET_GPU, XID_RESET_GPU },
        { 144, 150, N_("NVLink5 error"),
          N_("An NVLink5 (Blackwell) sub-component reported an error; the line names the sub-component, "
          "Fatal/Nonfatal, the link and the registers '<intrInfo> <errorStatus> …'."),
          N_("Depends on the sub-code: link down, bit-error-rate events, …"),
          N_("Decode <intrInfo> <errorStatus> with NVIDIA's 'Xid 144-150 Decode' table "
          "(WORKFLOW_NVLINK5_ERR): link-down sub-codes need a GPU reset, BER events can be ignored."),
          NULL, XID_SEV_ERROR, XID_ACT_RESET_GPU, XID_RESET_DEPENDS },
        { 154, 154, N_("GPU recovery action changed"),
          N_("Summarises the recovery that the other Xids require; the line names it: 'None', 'Drain P2P', "
          "'Drain and Reset', 'GPU Reset Required', 'Node Reboot Required' (595+: 'Recover IMEX Domain')."),
          N_("Another Xid on the same GPU."),
          N_("Do what the line says (also readable through NVML field 230)."),
          NULL, XID_SEV_WARNING, XID_ACT_SEE_MESSAGE, XID_RESET_DEPENDS },
        { 155, 155, N_("NVLink software-defined error"),
          N_("Link-down events flagged as intentional (including transitions to sleep)."),
          N_("Software or a user action."),
          N_("Reset the GPU; investigate what took the link down."),
          NULL, XID_SEV_ERROR, XID_ACT_RESET_GPU, XID_RESET_GPU },
        { 156, 156, N_("Resource retirement event"),
          N_("A GPU resource was retired."),
          N_("Hardware."),
          N_("Reset the GPU."),
          NULL, XID_SEV_ERROR, XID_ACT_RESET_GPU, XID_RESET_GPU },
        { 157, 157, N_("Resource retirement failure"),
          N_("No repair is possible for lack of resources."),
          N_("Hardware."),
          N_("Contact support."),
          NULL, XID_SEV_ERROR, XID_ACT_CONTACT_SUPPORT, XID_RESET_UNKNOWN },
        { 158, 158, N_("GPU fatal timeout"),
          N_("A fatal timeout on the GPU."),
          N_("Not stated by NVIDIA."),
          N_("Reset the GPU; contact support."),
          NULL, XID_SEV_ERROR, XID_ACT_RESET_GPU, XID_RESET_GPU },
        { 171, 172, N_("Uncorrectable DRAM/SRAM error"),
          N_("Details added to an Xid 48: whether the uncorrectable error was in DRAM (171) or SRAM (172)."),
          N_("Hardware: GPU memory (DRAM) or on-chip SRAM."),
          N_("Follow the Xid 48 it accompanies: reset the GPU."),
          NULL, XID_SEV_ERROR, XID_ACT_FOLLOW_OTHER, XID_RESET_GPU },
};

/* Codes whose catalog row gives no action ("-"): ghostvram's reading of the description. */
static const struct {
        unsigned code;
        enum xid_severity severity;
        enum xid_action action;
} xid_judged[] = {
        { 162, XID_SEV_INFO, XID_ACT_NONE },
        { 163, XID_SEV_WARNING, XID_ACT_CONTACT_SUPPORT },
        { 164, XID_SEV_WARNING, XID_ACT_CONTACT_SUPPORT },
        { 165, XID_SEV_ERROR, XID_ACT_CONTACT_SUPPORT },
        { 166, XID_SEV_ERROR, XID_ACT_CONTACT_SUPPORT },
        { 167, XID_SEV_ERROR, XID_ACT_CONTACT_SUPPORT },
        { 168, XID_SEV_ERROR, XID_ACT_CONTACT_SUPPORT },
        { 169, XID_SEV_ERROR, XID_ACT_RESET_GPU },
        { 170, XID_SEV_WARNING, XID_ACT_CONTACT_SUPPORT },
};

/* Resolution buckets of the catalog (sheet "Resolution Buckets"). */
static const struct {
        const char *bucket;
        const char *text;
        enum xid_severity severity;
        enum xid_action action;
} xid_buckets[] = {
        { "RESTART_APP", N_("restart the application; no GPU reset or reboot needed"), XID_SEV_WARNING, XID_ACT_RESTART_APP },
        { "RESET_GPU", N_("reset the GPU; no bare-metal restart needed"), XID_SEV_ERROR, XID_ACT_RESET_GPU },
        { "RESTART_BM", N_("restart the bare-metal machine"), XID_SEV_CRITICAL, XID_ACT_REBOOT },
        { "RESTART_VM", N_("restart the VM that owns the GPU"), XID_SEV_WARNING, XID_ACT_RESTART_VM },
        { "IGNORE", N_("no action"), XID_SEV_INFO, XID_ACT_NONE },
        { "CONTACT_SUPPORT", N_("contact NVIDIA support"), XID_SEV_WARNING, XID_ACT_CONTACT_SUPPORT },
        { "CHECK_MECHANICALS", N_("check the board's seating and connections"), XID_SEV_WARNING, XID_ACT_CHECK_HARDWARE },
        { "UPDATE_SWFW", N_("update the driver / firmware"), XID_SEV_WARNING, XID_ACT_UPDATE_SOFTWARE },
        { "CHECK_APP/CUDA", N_("the application passed bad data; the pid may identify it"), XID_SEV_WARNING, XID_ACT_CHECK_APP },
        { "INVESTIGATE_SW", N_("investigate the software"), XID_SEV_WARNING, XID_ACT_CONTACT_SUPPORT },
        { "INVESTIGATE_SW_USER", N_("investigate software or user actions"), XID_SEV_WARNING, XID_ACT_CONTACT_SUPPORT },
        { "INVESTIGATE_LINK_SI", N_("investigate the link's signal integrity"), XID_SEV_WARNING, XID_ACT_CHECK_HARDWARE },
        { "IGNORE (sympathetic)", N_("secondary error: resolve the other Xids first"), XID_SEV_INFO, XID_ACT_FOLLOW_OTHER },
        { "WORKFLOW_XID_13", N_("repeats on the same GPU/TPC: run DCGM / field diagnostics; alone: check the application"),
          XID_SEV_WARNING, XID_ACT_RESTART_APP },
        { "WORKFLOW_XID_31", N_("repeats on the same GPU: run DCGM / field diagnostics; alone: check the application"),
          XID_SEV_WARNING, XID_ACT_RESTART_APP },
        { "WORKFLOW_XID_45", N_("alone: restart the fabric manager; with other Xids: follow their guidance"),
          XID_SEV_INFO, XID_ACT_FOLLOW_OTHER },
        { "WORKFLOW_XID_48", N_("alone: reset the GPU; with Xid 63 or 64: drain the node and reset; run field diagnostics"),
          XID_SEV_ERROR, XID_ACT_RESET_GPU },
        { "WORKFLOW_NVLINK_ERR", N_("decode the seven registers of the Xid 74 line (NVIDIA's bit table)"),
          XID_SEV_ERROR, XID_ACT_RESET_GPU },
        { "WORKFLOW_NVLINK5_ERR", N_("decode <intrInfo> <errorStatus> with NVIDIA's 'Xid 144-150 Decode' table"),
          XID_SEV_ERROR, XID_ACT_RESET_GPU },
        { "XID_154", N_("follow the recovery action the Xid 154 line names"), XID_SEV_WARNING, XID_ACT_SEE_MESSAGE },
        { "XID_154_EVAL", N_("if an Xid 154 is present take its action, otherwise restart the application"),
          XID_SEV_WARNING, XID_ACT_RESTART_APP },
        { "XID_137_FLOW", N_("check the application's NVLink peer accesses"), XID_SEV_WARNING, XID_ACT_CHECK_APP },
        { "CHECK_UVM", N_("if UVM or vGPU is in use reset the GPU, otherwise no action"), XID_SEV_WARNING, XID_ACT_RESET_GPU },
        { "SYMPATHETIC_REPORT_SOLO", N_("report it if it comes alone"), XID_SEV_WARNING, XID_ACT_CONTACT_SUPPORT },
        { "RESTART_FM", N_("restart the fabric manager"), XID_SEV_WARNING, XID_ACT_CONTACT_SUPPORT },
};

static int find_bucket(const char *b)
{
        for (size_t i = 0; b && i < sizeof(xid_buckets) / sizeof(xid_buckets[0]); i++)
                if (strcmp(xid_buckets[i].bucket, b) == 0)
                        return (int)i;
        return -1;
}

const char *xid_bucket_text(const char *bucket)
{
        int i = find_bucket(bucket);
        return i < 0 ? NULL : xid_buckets[i].text;
}

const struct xid_info *xid_catalog_all(size_t *ret_n)
{
        *ret_n = sizeof(xid_table) / sizeof(xid_table[0]);
        return xid_table;
}

const struct xid_info *xid_catalog_lookup(int code)
{
        size_t n = sizeof(xid_table) / sizeof(xid_table[0]);
        size_t lo = 0, hi = n;
        if (code < 0)
                return NULL;
        while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if (xid_table[mid].code == (unsigned)code)
                        return &xid_table[mid];
                if (xid_table[mid].code < (unsigned)code)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return NULL;
}

static const struct xid_detail *find_detail(int code)
{
        for (size_t i = 0; i < sizeof(xid_details) / sizeof(xid_details[0]); i++)
                if (code >= 0 && (unsigned)code >= xid_details[i].first && (unsigned)code <= xid_details[i].last)
                        return &xid_details[i];
        return NULL;
}

static enum xid_reset reset_of(enum xid_action a)
{
        switch (a) {
        case XID_ACT_NONE:
        case XID_ACT_RESTART_APP:
        case XID_ACT_CHECK_APP:
        case XID_ACT_FOLLOW_OTHER:
        case XID_ACT_RESTART_VM:
        case XID_ACT_UPDATE_SOFTWARE:
                return XID_RESET_NO;
        case XID_ACT_RESET_GPU:
        case XID_ACT_DRAIN_AND_RESET:
                return XID_RESET_GPU;
        case XID_ACT_REBOOT:
                return XID_RESET_REBOOT;
        case XID_ACT_SEE_MESSAGE:
                return XID_RESET_DEPENDS;
        default:
                return XID_RESET_UNKNOWN;
        }
}

void xid_explain(int code, struct xid_explanation *ret)
{
        struct xid_explanation x = { .code = code };
        x.info = xid_catalog_lookup(code);
        const struct xid_detail *d = find_detail(code);
        if (!x.info) {
                x.name = N_("Unknown Xid");
                x.meaning = code == 999 ? N_("NVML reports 999 for an Xid it does not know; the kernel log line "
                                             "has the real code.")
                                        : N_("This code is not in NVIDIA's Xid catalog as ghostvram knows it "
                                             "(a newer driver may define it).");
                x.cause = N_("Unknown.");
                x.todo = N_("Look it up in NVIDIA's current Xid catalog and nverror.h of your driver; if it "
                            "repeats, collect nvidia-bug-report.sh and contact support.");
                x.severity = XID_SEV_UNKNOWN;
                x.action = XID_ACT_UNKNOWN;
                x.reset = XID_RESET_UNKNOWN;
                *ret = x;
                return;
        }
        if (d) {
                x.name = d->name;
                x.meaning = d->meaning;
                x.cause = d->cause;
                x.todo = d->todo;
                x.note = d->note;
                x.severity = d->severity;
                x.action = d->action;
                x.reset = d->reset;
                *ret = x;
                return;
        }
        x.name = strcmp(x.info->description, "Unused") == 0 && strcmp(x.info->old_name, "(same)") != 0 &&
                         strcmp(x.info->old_name, "-") != 0
                 ? x.info->old_name
                 : x.info->description;
        x.meaning = NULL;       /* the catalog's description says it */
        x.cause = NULL;         /* expand info->causes */
        int b = find_bucket(x.info->immediate);
        x.severity = b >= 0 ? xid_buckets[b].severity : XID_SEV_UNKNOWN;
        x.action = b >= 0 ? xid_buckets[b].action : XID_ACT_UNKNOWN;
        for (size_t i = 0; i < sizeof(xid_judged) / sizeof(xid_judged[0]); i++) {
                if (xid_judged[i].code == (unsigned)code) {
                        x.severity = xid_judged[i].severity;
                        x.action = xid_judged[i].action;
                        x.note = N_("NVIDIA's catalog gives no action for this code; the severity and action "
                                    "are ghostvram's reading of its description.");
                }
        }
        x.todo = xid_action_text(x.action);
        x.reset = reset_of(x.action);
        *ret = x;
}

int xid_causes_text(const char *flags, struct buf *out)
{
        static const struct { const char *flag, *text; } words[] = {
                { "HW", N_("hardware error") }, { "Drv", N_("driver error") }, { "App", N_("user application error") },
                { "SysMem", N_("system memory corruption") }, { "Bus", N_("bus error") }, { "Therm", N_("thermal issue") },
                { "FB", N_("framebuffer (GPU memory) corruption") },
        };
        int r = 0;
        bool first = true;
        const char *p = flags;
        if (!p || !*p || strcmp(p, "-") == 0)
                return buf_puts(out, _("not stated"));
        while (*p && r == 0) {
                const char *e = strchr(p, '/');
                size_t n = e ? (size_t)(e - p) : strlen(p);
                const char *w = NULL;
                for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
                        if (strlen(words[i].flag) == n && strncmp(words[i].flag, p, n) == 0)
                                w = words[i].text;
                if (!first)
                        r = buf_puts(out, _(", "));
                if (r == 0)
                        r = w ? buf_puts(out, _(w)) : buf_append(out, p, n);
                first = false;
                p += n;
                if (*p == '/')
                        p++;
        }
        return r;
}

/* ---- names ----------------------------------------------------------------------------------- */

const char *xid_kind_name(enum xid_kind k)
{
        static const char *const names[XID_KIND_COUNT] = {
                [XID_KIND_XID] = "xid",
                [XID_KIND_FALLEN_OFF_BUS] = "fallen_off_bus",
                [XID_KIND_SXID] = "sxid",
                [XID_KIND_DRIVER_LOAD] = "driver_load",
                [XID_KIND_INIT_FAILED] = "init_failed",
                [XID_KIND_API_MISMATCH] = "api_mismatch",
                [XID_KIND_CRASH_DUMP] = "crash_dump",
                [XID_KIND_RC_WATCHDOG] = "rc_watchdog",
                [XID_KIND_GSP_ERROR] = "gsp_error",
                [XID_KIND_UVM_ERROR] = "uvm_error",
                [XID_KIND_GPU_UUID] = "gpu_uuid",
                [XID_KIND_DRM] = "drm",
                [XID_KIND_OTHER] = "other",
        };
        return (unsigned)k < XID_KIND_COUNT ? names[k] : "other";
}

const char *xid_severity_name(enum xid_severity s)
{
        switch (s) {
        case XID_SEV_INFO: return "info";
        case XID_SEV_WARNING: return "warning";
        case XID_SEV_ERROR: return "error";
        case XID_SEV_CRITICAL: return "critical";
        default: return "unknown";
        }
}

static const struct {
        const char *name;
        const char *text;
} xid_actions[] = {
        [XID_ACT_UNKNOWN] = { "unknown", N_("Unknown code: look it up in NVIDIA's current Xid catalog; if it repeats, "
                                         "collect nvidia-bug-report.sh and contact support.") },
        [XID_ACT_NONE] = { "none", N_("No action needed.") },
        [XID_ACT_RESTART_APP] = { "restart_app", N_("Restart the application; no GPU reset or reboot needed.") },
        [XID_ACT_CHECK_APP] = { "check_app", N_("The application passed bad data to the GPU: check it (the pid may "
                                             "identify it); no GPU reset needed.") },
        [XID_ACT_FOLLOW_OTHER] = { "follow_other_xid", N_("A secondary event: follow the guidance of the Xid that "
                                                       "caused it.") },
        [XID_ACT_RESET_GPU] = { "reset_gpu", N_("Reset the GPU once no process uses it (nvidia-smi -r -i N), or "
                                             "reboot; a reboot is not required.") },
        [XID_ACT_DRAIN_P2P] = { "drain_p2p", N_("Drain peer-to-peer (NVLink) traffic from this GPU.") },
        [XID_ACT_DRAIN_AND_RESET] = { "drain_and_reset", N_("Drain the node (stop scheduling work on it), then "
                                                         "reset the GPU.") },
        [XID_ACT_REBOOT] = { "reboot", N_("Reboot the machine; a GPU reset cannot recover this.") },
        [XID_ACT_RESTART_VM] = { "restart_vm", N_("Restart the VM that owns the GPU.") },
        [XID_ACT_CHECK_HARDWARE] = { "check_hardware", N_("Check the board's seating, power connectors, cooling and "
                                                       "PCIe slot.") },
        [XID_ACT_UPDATE_SOFTWARE] = { "update_software", N_("Make the driver's parts match: reinstall or update the "
                                                         "driver, or reload its kernel modules (reboot).") },
        [XID_ACT_BUG_REPORT] = { "bug_report", N_("Run nvidia-bug-report.sh as root now, before the driver is "
                                               "unloaded or the machine rebooted.") },
        [XID_ACT_CONTACT_SUPPORT] = { "contact_support", N_("Contact NVIDIA support or the hardware vendor "
                                                         "(attach nvidia-bug-report.sh).") },
        [XID_ACT_SEE_MESSAGE] = { "see_message", N_("Do what the message says.") },
};

const char *xid_action_name(enum xid_action a)
{
        return (unsigned)a < sizeof(xid_actions) / sizeof(xid_actions[0]) ? xid_actions[a].name : "unknown";
}

const char *xid_action_text(enum xid_action a)
{
        return (unsigned)a < sizeof(xid_actions) / sizeof(xid_actions[0]) ? xid_actions[a].text
                                                                           : xid_actions[0].text;
}

const char *xid_reset_text(enum xid_reset r)
{
        switch (r) {
        case XID_RESET_NO: return N_("No: neither a GPU reset nor a reboot is needed.");
        case XID_RESET_WHEN_CONVENIENT: return N_("Not urgently: reset the GPU when convenient.");
        case XID_RESET_GPU: return N_("Yes: a GPU reset (or a reboot) is needed; a reboot is not required.");
        case XID_RESET_REBOOT: return N_("Yes: reboot the machine; a GPU reset is not enough.");
        case XID_RESET_DEPENDS: return N_("Depends: on what the message says.");
        default: return N_("Not stated by NVIDIA.");
        }
}

/* ---- events ---------------------------------------------------------------------------------- */

/* Xid 154: "GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)". */
static bool recovery_action(const char *msg, enum xid_action *act, enum xid_severity *sev)
{
        static const struct { const char *name; enum xid_action a; enum xid_severity s; } map[] = {
                { "None", XID_ACT_NONE, XID_SEV_INFO },
                { "GPU Reset Required", XID_ACT_RESET_GPU, XID_SEV_ERROR },
                { "Node Reboot Required", XID_ACT_REBOOT, XID_SEV_CRITICAL },
                { "Drain P2P", XID_ACT_DRAIN_P2P, XID_SEV_WARNING },
                { "Drain and Reset", XID_ACT_DRAIN_AND_RESET, XID_SEV_ERROR },
        };
        const char *to = msg ? strstr(msg, " to 0x") : NULL;
        const char *open = to ? strchr(to, '(') : NULL;
        if (!open)
                return false;
        for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
                size_t n = strlen(map[i].name);
                if (strncmp(open + 1, map[i].name, n) == 0 && open[1 + n] == ')') {
                        *act = map[i].a;
                        *sev = map[i].s;
                        return true;
                }
        }
        return false;
}

/* What the non-Xid kinds say (Xid, fallen off the bus and SXid are judged from their code). */
static const struct xid_assessment kind_assessment[XID_KIND_COUNT] = {
        [XID_KIND_DRIVER_LOAD] = { XID_SEV_INFO, XID_ACT_NONE, N_("NVIDIA kernel driver loaded"),
                                   N_("Events before this line belong to an earlier load of the driver."), NULL },
        [XID_KIND_INIT_FAILED] = { XID_SEV_ERROR, XID_ACT_REBOOT, N_("GPU initialisation failed"),
                                   N_("The driver could not initialise the GPU, so nothing can use it: reboot; if it "
                                   "persists, check seating, power and the driver install (nvidia-bug-report.sh), "
                                   "then contact support."), NULL },
        [XID_KIND_API_MISMATCH] = { XID_SEV_ERROR, XID_ACT_UPDATE_SOFTWARE,
                                    N_("Driver version mismatch (user space vs kernel module)"),
                                    N_("User-space driver libraries and the loaded kernel module differ (NVML fails "
                                    "with RM_VERSION_MISMATCH): reboot or reload the nvidia modules after a driver "
                                    "update."), NULL },
        [XID_KIND_CRASH_DUMP] = { XID_SEV_WARNING, XID_ACT_BUG_REPORT, N_("GPU crash dump created"),
                                  N_("Run nvidia-bug-report.sh as root now, before the driver is unloaded or the "
                                  "machine rebooted."), NULL },
        [XID_KIND_RC_WATCHDOG] = { XID_SEV_WARNING, XID_ACT_FOLLOW_OTHER, N_("RC watchdog: GPU probably locked"),
                                   N_("The GPU stopped making progress; an Xid 8 normally follows: see it."), NULL },
        [XID_KIND_GSP_ERROR] = { XID_SEV_ERROR, XID_ACT_RESET_GPU, N_("GSP error or timeout"),
                                 N_("The GPU System Processor is failing or not answering: reset the GPU (or "
                                 "power-cycle the node) if it persists."), NOTE_STUCK },
        [XID_KIND_UVM_ERROR] = { XID_SEV_WARNING, XID_ACT_SEE_MESSAGE, N_("nvidia-uvm error"),
                                 N_("The unified-memory driver reported an error: see the message."), NULL },
        [XID_KIND_GPU_UUID] = { XID_SEV_INFO, XID_ACT_NONE, N_("GPU identified (before its first Xid)"),
                                N_("No action needed."), NULL },
        [XID_KIND_DRM] = { XID_SEV_WARNING, XID_ACT_SEE_MESSAGE, N_("nvidia-drm (display/GEM memory) message"),
                           N_("The DRM part of the driver reported a problem. 'Failed to reclaim vram for pid N': "
                           "video memory of that process's GEM/display objects was not given back when it went: "
                           "if the GPU shows memory nobody holds, that PID is the likely owner ('ghostvram scan'); "
                           "restarting the display server or compositor that imported its buffers releases it."),
                           NULL },
        [XID_KIND_OTHER] = { XID_SEV_INFO, XID_ACT_NONE, N_("NVIDIA kernel message"), N_("No action needed."), NULL },
};

void xid_event_assess(const struct xid_event *e, struct xid_assessment *ret)
{
        struct xid_assessment a;
        struct xid_explanation x;
        switch (e->kind) {
        case XID_KIND_XID:
        case XID_KIND_FALLEN_OFF_BUS:
                xid_explain(e->xid, &x);
                a.severity = x.severity;
                a.action = x.action;
                a.title = e->kind == XID_KIND_FALLEN_OFF_BUS ? N_("GPU has fallen off the bus (no Xid line)") : x.name;
                a.note = x.note;
                if (e->xid == 154)
                        recovery_action(e->message, &a.action, &a.severity);
                if (e->xid == 45 && e->caused_by != XID_NONE)
                        a.action = XID_ACT_FOLLOW_OTHER;
                a.advice = xid_action_text(a.action);
                break;
        case XID_KIND_SXID:
                a.severity = e->message && strstr(e->message, "Non-fatal") ? XID_SEV_WARNING
                             : e->message && strstr(e->message, "Fatal")   ? XID_SEV_ERROR
                                                                           : XID_SEV_WARNING;
                a.action = a.severity == XID_SEV_ERROR ? XID_ACT_CONTACT_SUPPORT : XID_ACT_NONE;
                a.title = N_("NVSwitch error (SXid, not a GPU Xid)");
                a.advice = N_("An NVSwitch reported it: see the fabric manager's log and NVIDIA's NVSwitch (SXid) "
                              "documentation.");
                a.note = NULL;
                break;
        default:
                a = kind_assessment[(unsigned)e->kind < XID_KIND_COUNT ? e->kind : XID_KIND_OTHER];
                break;
        }
        *ret = a;
}
