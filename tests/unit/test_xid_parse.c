/* Unit tests for src/collect/xid.c: every NVRM/Xid line shape of the reference, the prefixes
 * seen in the wild, multi-line messages, companion lines, GPU mapping, --since, JSON. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include <jansson.h>

#include "collect/kernel.h"
#include "collect/xid.h"
#include "util/escape.h"
#include "util/fileio.h"

/* 2026-11-30T12:00:00Z: "now" for year-less syslog stamps */
#define NOW 1796040000.0

static int parse(const char *text, const struct kmsg_time_opts *t, struct xid_list *l)
{
        static const struct kmsg_time_opts dflt = { .boot_time = -1, .now = NOW };
        memset(l, 0, sizeof(*l));
        return xid_parse_log(text, strlen(text), t ? t : &dflt, "file", l);
}

/* parse, which must succeed with n events */
static void parse_expect(const char *text, const struct kmsg_time_opts *t, size_t n, struct xid_list *l)
{
        assert_int_equal(parse(text, t, l), 0);
        assert_int_equal(l->n, n);
}

/* ---- one case per line shape --------------------------------------------------------------- */

struct shape {
        const char *what;
        const char *log;                /* the input, one or more lines */
        enum xid_kind kind;
        int xid, sxid, caused_by;
        const char *pci;                /* "" none */
        int gi, ci;
        long pid;                       /* -1: unknown */
        const char *name;               /* "" none */
        const char *msg;                /* the whole message */
};

#define NO XID_NONE

static const struct shape shapes[] = {
        { "nvidia-drm, the guide's line: PCI and pid",
          "[ 5321.004211] NVIDIA-GPU 0000:01:00.0: DRM: Failed to reclaim vram for pid 1234",
          XID_KIND_DRM, NO, NO, NO, "0000:01:00.0", -1, -1, 1234, "", "Failed to reclaim vram for pid 1234" },
        { "nvidia-drm, upper-case PCI, syslog tag",
          "Nov 30 11:59:00 gpu7 kernel: NVIDIA-GPU 0000:3B:00.0: DRM: Failed to reclaim vram for pid 77",
          XID_KIND_DRM, NO, NO, NO, "0000:3b:00.0", -1, -1, 77, "", "Failed to reclaim vram for pid 77" },
        { "nvidia-drm, NV_DRM_DEV_LOG_ERR form: no PCI id, no pid",
          "[  275.180346] [drm:nv_drm_gem_alloc_nvkms_memory_ioctl [nvidia_drm]] *ERROR* [nvidia-drm] [GPU ID 0x00000100] "
          "Failed to allocate NVKMS memory for GEM object",
          XID_KIND_DRM, NO, NO, NO, "", -1, -1, -1, "", "Failed to allocate NVKMS memory for GEM object" },
        { "nvidia-drm, NV_DRM_DEV_LOG_INFO form",
          "[  276.863562] [drm] [nvidia-drm] [GPU ID 0x00000100] Failed to allocate NVKMS video memory for GEM object, trying "
          "to fall back to sysmem",
          XID_KIND_DRM, NO, NO, NO, "", -1, -1, -1, "",
          "Failed to allocate NVKMS video memory for GEM object, trying to fall back to sysmem" },
        { "nvidia-drm, pid 0 is no pid",
          "NVIDIA-GPU 0000:01:00.0: DRM: Failed to reclaim vram for pid 0",
          XID_KIND_DRM, NO, NO, NO, "0000:01:00.0", -1, -1, -1, "", "Failed to reclaim vram for pid 0" },
        { "<=340 closed: no PCI: prefix",
          "[  102.000001] NVRM: Xid (0000:01:00): 3, C 00000005 SC 00000007 M 00001ffc Data ffffffff",
          XID_KIND_XID, 3, NO, NO, "0000:01:00.0", -1, -1, -1, "", "C 00000005 SC 00000007 M 00001ffc Data ffffffff" },
        { "old doc example",
          "NVRM: Xid (0000:03:00): 14, Channel 00000001",
          XID_KIND_XID, 14, NO, NO, "0000:03:00.0", -1, -1, -1, "", "Channel 00000001" },
        { "346-4xx: PCI: prefix, no pid",
          "NVRM: Xid (PCI:0000:01:00): 31, Ch 00000013, engmask 00000101, intr 10000000",
          XID_KIND_XID, 31, NO, NO, "0000:01:00.0", -1, -1, -1, "", "Ch 00000013, engmask 00000101, intr 10000000" },
        { "450-510: pid without name",
          "NVRM: Xid (PCI:0000:0c:00): 31, pid=11461, Ch 00000053, intr 10000000. MMU Fault",
          XID_KIND_XID, 31, NO, NO, "0000:0c:00.0", -1, -1, 11461, "", "Ch 00000053, intr 10000000. MMU Fault" },
        { "515-565: pid='<unknown>', name=<unknown>",
          "NVRM: Xid (PCI:0000:86:00): 48, pid='<unknown>', name=<unknown>, An uncorrectable double bit error (DBE) "
          "has been detected on GPU in the framebuffer at physAddr 0x1234000 partition 3, subpartition 1.",
          XID_KIND_XID, 48, NO, NO, "0000:86:00.0", -1, -1, -1, "",
          "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at physAddr "
          "0x1234000 partition 3, subpartition 1." },
        { "515+: pid and name",
          "NVRM: Xid (PCI:0000:3b:00): 13, pid=4242, name=python3.10, Graphics SM Warp Exception on (GPC 1, TPC 0, SM 0): Out Of Range Address",
          XID_KIND_XID, 13, NO, NO, "0000:3b:00.0", -1, -1, 4242, "python3.10",
          "Graphics SM Warp Exception on (GPC 1, TPC 0, SM 0): Out Of Range Address" },
        { "MIG GPU-I",
          "NVRM: Xid (PCI:0000:01:00 GPU-I:05): 94, pid=7194, Contained: CE User Channel (0x9). RST: No, D-RST: No",
          XID_KIND_XID, 94, NO, NO, "0000:01:00.0", 5, -1, 7194, "", "Contained: CE User Channel (0x9). RST: No, D-RST: No" },
        { "MIG GPU-I and GPU-CI",
          "NVRM: Xid (PCI:0000:41:00 GPU-I:02 GPU-CI:01): 43, pid=3141, name=gpu-feature-dis, Ch 00000008",
          XID_KIND_XID, 43, NO, NO, "0000:41:00.0", 2, 1, 3141, "gpu-feature-dis", "Ch 00000008" },
        { "570+: no process context",
          "NVRM: Xid (PCI:0000:3e:00): 154, GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)",
          XID_KIND_XID, 154, NO, NO, "0000:3e:00.0", -1, -1, -1, "",
          "GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)" },
        { "575+: caused by previous Xid",
          "NVRM: Xid (PCI:0000:3b:00): 45, pid=1818990, name=python3, Ch 00000001 caused by previous Xid 149",
          XID_KIND_XID, 45, NO, 149, "0000:3b:00.0", -1, -1, 1818990, "python3", "Ch 00000001 caused by previous Xid 149" },
        { "number only",
          "NVRM: Xid (PCI:0000:3b:00): 79",
          XID_KIND_XID, 79, NO, NO, "0000:3b:00.0", -1, -1, -1, "", "" },
        { "GB200 non-zero domain, NVLink5",
          "NVRM: Xid (PCI:0019:01:00): 149, NETIR_LINK_EVT Fatal XC0 i0 Link 12 (0x00000004 0x00000000 0x00000000)",
          XID_KIND_XID, 149, NO, NO, "0019:01:00.0", -1, -1, -1, "",
          "NETIR_LINK_EVT Fatal XC0 i0 Link 12 (0x00000004 0x00000000 0x00000000)" },
        { "redacted PCI id",
          "NVRM: Xid (PCI:...): 137, pid=22, name=nccl, RLW_RXPIPE interrupt hit on link 11 on GPU0: PRIV Error",
          XID_KIND_XID, 137, NO, NO, "", -1, -1, 22, "nccl", "RLW_RXPIPE interrupt hit on link 11 on GPU0: PRIV Error" },
        { "function number and upper case",
          "NVRM: Xid (PCI:0000:B3:00.0): 31, pid=9, name=x, y",
          XID_KIND_XID, 31, NO, NO, "0000:b3:00.0", -1, -1, 9, "x", "y" },
        { "unexpected trailing parenthesis",
          "NVRM: Xid (PCI:0000:2b:00): 79, pid=1, name=Xorg, GPU has fallen off the bus.)",
          XID_KIND_XID, 79, NO, NO, "0000:2b:00.0", -1, -1, 1, "Xorg", "GPU has fallen off the bus.)" },
        { "unknown code kept",
          "NVRM: Xid (PCI:0000:04:00): 999, a code from the future",
          XID_KIND_XID, 999, NO, NO, "0000:04:00.0", -1, -1, -1, "", "a code from the future" },
        { "SXid with Link: an NVSwitch, not an Xid",
          "nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 32 egress non-posted PRIV error (First)",
          XID_KIND_SXID, NO, 12028, NO, "0000:05:00.0", -1, -1, -1, "", "Non-fatal, Link 32 egress non-posted PRIV error (First)" },
        { "SXid with Data",
          "nvidia-nvswitch0: SXid (PCI:0000:86:00.0): 12028, Data {0x000001c0, 0x00000000}",
          XID_KIND_SXID, NO, 12028, NO, "0000:86:00.0", -1, -1, -1, "", "Data {0x000001c0, 0x00000000}" },
        { "fallen off the bus, NV_DEV_PRINTF line alone (Xid suppressed)",
          "NVRM: GPU 0000:2b:00.0: GPU has fallen off the bus.",
          XID_KIND_FALLEN_OFF_BUS, 79, NO, NO, "0000:2b:00.0", -1, -1, -1, "", "GPU 0000:2b:00.0: GPU has fallen off the bus." },
        { "fallen off the bus, probe time, one printk in dmesg (continuation lines)",
          "[   49.261458] NVRM: The NVIDIA GPU 0000:01:00.0\n"
          "               NVRM: (PCI ID: 10de:1b80) installed in this system has\n"
          "               NVRM: fallen off the bus and is not responding to commands.",
          XID_KIND_FALLEN_OFF_BUS, 79, NO, NO, "0000:01:00.0", -1, -1, -1, "",
          "The NVIDIA GPU 0000:01:00.0 (PCI ID: 10de:1b80) installed in this system has fallen off the bus and is "
          "not responding to commands." },
        { "fallen off the bus, probe time, one /dev/kmsg record with \\x0a",
          "4,1003,91000000,-;NVRM: The NVIDIA GPU 0000:d8:00.0\\x0aNVRM: (PCI ID: 10de:20b0) installed in this "
          "system has\\x0aNVRM: fallen off the bus and is not responding to commands.",
          XID_KIND_FALLEN_OFF_BUS, 79, NO, NO, "0000:d8:00.0", -1, -1, -1, "",
          "The NVIDIA GPU 0000:d8:00.0 (PCI ID: 10de:20b0) installed in this system has fallen off the bus and is "
          "not responding to commands." },
        { "fallen off the bus, old closed driver",
          "NVRM: GPU at 0000:01:00.0 has fallen off the bus.",
          XID_KIND_FALLEN_OFF_BUS, 79, NO, NO, "0000:01:00.0", -1, -1, -1, "", "GPU at 0000:01:00.0 has fallen off the bus." },
        { "driver load, closed flavour",
          "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  535.183.01  Sun May 12 19:39:15 UTC 2024",
          XID_KIND_DRIVER_LOAD, NO, NO, NO, "", -1, -1, -1, "",
          "loading NVIDIA UNIX x86_64 Kernel Module  535.183.01  Sun May 12 19:39:15 UTC 2024" },
        { "RmInitAdapter failed",
          "NVRM: GPU 0000:01:00.0: RmInitAdapter failed! (0x26:0xffff:1227)",
          XID_KIND_INIT_FAILED, NO, NO, NO, "0000:01:00.0", -1, -1, -1, "", "GPU 0000:01:00.0: RmInitAdapter failed! (0x26:0xffff:1227)" },
        { "probe routine failed",
          "NVRM: The NVIDIA probe routine failed for 1 device(s).",
          XID_KIND_INIT_FAILED, NO, NO, NO, "", -1, -1, -1, "", "The NVIDIA probe routine failed for 1 device(s)." },
        { "no devices probed",
          "NVRM: No NVIDIA devices probed.",
          XID_KIND_INIT_FAILED, NO, NO, NO, "", -1, -1, -1, "", "No NVIDIA devices probed." },
        { "API mismatch, 515-570 wording, one printk",
          "NVRM: API mismatch: the client has the version 535.104.05, but\n"
          " NVRM: this kernel module has the version 535.54.03.  Please\n"
          " NVRM: make sure that this kernel module and all NVIDIA driver\n"
          " NVRM: components have the same version.",
          XID_KIND_API_MISMATCH, NO, NO, NO, "", -1, -1, -1, "",
          "API mismatch: the client has the version 535.104.05, but this kernel module has the version 535.54.03.  "
          "Please make sure that this kernel module and all NVIDIA driver components have the same version." },
        { "API mismatch, 575+ wording names the client",
          "NVRM: API mismatch: the client 'nvidia-smi' (pid 4242)\n"
          " NVRM: has the version 575.51.02, but this kernel module has\n"
          " NVRM: the version 570.86.15.  Please make sure that this\n"
          " NVRM: kernel module and all NVIDIA driver components\n"
          " NVRM: have the same version.",
          XID_KIND_API_MISMATCH, NO, NO, NO, "", -1, -1, 4242, "nvidia-smi",
          "API mismatch: the client 'nvidia-smi' (pid 4242) has the version 575.51.02, but this kernel module has "
          "the version 570.86.15.  Please make sure that this kernel module and all NVIDIA driver components have "
          "the same version." },
        { "GPU crash dump",
          "NVRM: A GPU crash dump has been created. If possible, please run\n"
          " NVRM: nvidia-bug-report.sh as root to collect this data before\n"
          " NVRM: the NVIDIA kernel module is unloaded.",
          XID_KIND_CRASH_DUMP, NO, NO, NO, "", -1, -1, -1, "",
          "A GPU crash dump has been created. If possible, please run nvidia-bug-report.sh as root to collect this "
          "data before the NVIDIA kernel module is unloaded." },
        { "RC watchdog",
          "NVRM: krcWatchdog_IMPL: RC watchdog: GPU is probably locked!  Notify Timeout Seconds: 7",
          XID_KIND_RC_WATCHDOG, NO, NO, NO, "", -1, -1, -1, "",
          "krcWatchdog_IMPL: RC watchdog: GPU is probably locked!  Notify Timeout Seconds: 7" },
        { "RC watchdog, 590+ GPU prefix",
          "NVRM: GPU0 krcWatchdog_IMPL: RC watchdog: GPU is probably locked!  Notify Timeout Seconds: 7",
          XID_KIND_RC_WATCHDOG, NO, NO, NO, "", -1, -1, -1, "",
          "GPU0 krcWatchdog_IMPL: RC watchdog: GPU is probably locked!  Notify Timeout Seconds: 7" },
        { "GSP RPC rate limiting",
          "NVRM: Rate limiting GSP RPC error prints for GPU at PCI:0000:3b:00 (printing 1 of every 30).  The GPU likely needs to be reset.",
          XID_KIND_GSP_ERROR, NO, NO, NO, "0000:3b:00.0", -1, -1, -1, "",
          "Rate limiting GSP RPC error prints for GPU at PCI:0000:3b:00 (printing 1 of every 30).  The GPU likely needs to be reset." },
        { "GSP heartbeat timeout, 590+",
          "NVRM: GPU6 _kgspIsHeartbeatTimedOut: Heartbeat timed out, curtime 0x1",
          XID_KIND_GSP_ERROR, NO, NO, NO, "", -1, -1, -1, "", "GPU6 _kgspIsHeartbeatTimedOut: Heartbeat timed out, curtime 0x1" },
        { "GSP CrashCat report header, pre-590",
          "NVRM: kgspHealthCheck_TU102: ********** GSP-CrashCat Report **********",
          XID_KIND_GSP_ERROR, NO, NO, NO, "", -1, -1, -1, "", "kgspHealthCheck_TU102: ********** GSP-CrashCat Report **********" },
        { "GSP CrashCat report body line: not an event of its own",
          "NVRM: GPU0 kgspHealthCheck_TU102:     GSP task watchdog timeout @ pc:0x1234",
          XID_KIND_OTHER, NO, NO, NO, "", -1, -1, -1, "", "GPU0 kgspHealthCheck_TU102:     GSP task watchdog timeout @ pc:0x1234" },
        { "nvidia-uvm error print",
          "nvidia-uvm: uvm_gpu.c:1234 uvm_gpu_check_ecc_error[pid:4321] ECC error notified",
          XID_KIND_UVM_ERROR, NO, NO, NO, "", -1, -1, 4321, "", "uvm_gpu.c:1234 uvm_gpu_check_ecc_error[pid:4321] ECC error notified" },
        { "nvidia-uvm load",
          "nvidia-uvm: Loaded the UVM driver, major device number 235.",
          XID_KIND_OTHER, NO, NO, NO, "", -1, -1, -1, "", "Loaded the UVM driver, major device number 235." },
        { "GPU UUID line before the first Xid",
          "NVRM: GPU at PCI:0000:3b:00: GPU-6f1e6e9f-5c2b-7d3c-8d0e-1b2a3c4d5e6f",
          XID_KIND_GPU_UUID, NO, NO, NO, "0000:3b:00.0", -1, -1, -1, "", "GPU at PCI:0000:3b:00: GPU-6f1e6e9f-5c2b-7d3c-8d0e-1b2a3c4d5e6f" },
        { "NVRM without colon",
          "NVRM cpuidInfoAMD: Unrecognized AMD processor in cpuidInfoAMD",
          XID_KIND_OTHER, NO, NO, NO, "", -1, -1, -1, "", "cpuidInfoAMD: Unrecognized AMD processor in cpuidInfoAMD" },
        { "nvidia-modeset",
          "nvidia-modeset: ERROR: GPU:0: Idling display engine timed out: 0x0000c67d:0:0:1128",
          XID_KIND_OTHER, NO, NO, NO, "", -1, -1, -1, "", "nvidia-modeset: ERROR: GPU:0: Idling display engine timed out: 0x0000c67d:0:0:1128" },
        { "VF probe abort names its device",
          "NVRM: Aborting probe for VF 0000:3b:00.4 since IOMMU is not present on the system.",
          XID_KIND_OTHER, NO, NO, NO, "0000:3b:00.4", -1, -1, -1, "", "Aborting probe for VF 0000:3b:00.4 since IOMMU is not present on the system." },
};

static void test_shapes(void **state)
{
        (void)state;
        for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
                const struct shape *s = &shapes[i];
                struct xid_list l;
                print_message("shape: %s\n", s->what);
                parse_expect(s->log, NULL, 1, &l);
                const struct xid_event *e = &l.ev[0];
                assert_int_equal(e->kind, s->kind);
                assert_int_equal(e->xid, s->xid);
                assert_int_equal(e->sxid, s->sxid);
                assert_int_equal(e->caused_by, s->caused_by);
                assert_string_equal(e->pci_bus_id, s->pci);
                assert_int_equal(e->gpu_instance, s->gi);
                assert_int_equal(e->compute_instance, s->ci);
                assert_int_equal(e->pid_known, s->pid >= 0);
                if (s->pid >= 0)
                        assert_int_equal(e->pid, s->pid);
                assert_string_equal(e->process_name, s->name);
                assert_string_equal(e->message, s->msg);
                assert_int_equal(e->gpu_index, -1);
                assert_string_equal(e->source, "file");
                assert_non_null(e->raw);
                xid_list_free(&l);
        }
}

static void test_driver_versions(void **state)
{
        (void)state;
        static const struct { const char *line, *version; } cases[] = {
                { "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  535.183.01  Sun May 12 19:39:15 UTC 2024", "535.183.01" },
                { "NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  570.158.01  Release Build  "
                  "(dvs-builder@U16-I3-B03-4-1)  Tue Jun  3 11:51:52 UTC 2025", "570.158.01" },
                { "NVRM: loading NVIDIA UNIX Open Kernel Module for aarch64  580.65.06  Release Build  "
                  "(dvs-builder@U22)  Sun Jul 27 06:54:38 UTC 2025", "580.65.06" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct xid_list l;
                parse_expect(cases[i].line, NULL, 1, &l);
                assert_int_equal(l.ev[0].kind, XID_KIND_DRIVER_LOAD);
                assert_string_equal(l.ev[0].driver_version, cases[i].version);
                xid_list_free(&l);
        }
}

/* ---- the prefixes seen in the wild ------------------------------------------------------------ */

struct prefixed {
        const char *prefix;
        bool time_known;
        double time;
        bool mono_known;
        double mono;
        int events;             /* 0: not a kernel line (written by a process) */
};

static void test_prefixes(void **state)
{
        (void)state;
        static const struct prefixed cases[] = {
                { "", false, 0, false, 0, 1 },
                { "[ 5107.644336] ", false, 0, true, 5107.644336, 1 },
                { "[   49.261458] ", false, 0, true, 49.261458, 1 },
                { "[Mon Nov 30 10:11:12 2026] ", true, 1796033472, false, 0, 1 },
                { "[Tue Dec  1 10:11:12 2026] ", true, 1796119872, false, 0, 1 },
                { "kern  :err   : 2025-01-25T10:34:54,859532+00:00 ", true, 1737801294.859532, false, 0, 1 },
                { "kern  :err   : [ 12.500000] ", false, 0, true, 12.5, 1 },
                { "user  :warn  : [ 12.500000] ", false, 0, true, 12.5, 0 },
                { "Nov 30 10:11:12 host kernel: ", true, 1796033472, false, 0, 1 },
                { "Dec  2 11:38:47 worker4 kernel: [  219.470994] ", true, 1764675527, true, 219.470994, 1 },
                { "Nov 30 10:11:12.250000 host kernel: ", true, 1796033472.25, false, 0, 1 },
                { "2026-11-30T10:11:12+0100 gpu-node-7 kernel: ", true, 1796029872, false, 0, 1 },
                { "2026-11-30T10:11:12.123456+01:00 gpu-node-7 kernel: ", true, 1796029872.123456, false, 0, 1 },
                { "2026-11-30T10:11:12Z host kernel: ", true, 1796033472, false, 0, 1 },
                { "Mon 2026-11-30 10:11:12 UTC host kernel: ", true, 1796033472, false, 0, 1 },
                { "192.168.11.119: kern: warning: [2026-04-22T21:27:51.291660856Z]: ", true, 1776893271.291660, false, 0, 1 },
                { "kernel: ", false, 0, false, 0, 1 },
                { "Mai 17 11:38:47 host kernel: ", false, 0, false, 0, 1 },
                { "4\xe6\x9c\x88 20 11:38:47 host kernel: ", false, 0, false, 0, 1 },
                { "<3>[   12.000001] ", false, 0, true, 12.000001, 1 },
                { "[\xe2\x80\xa6] ", false, 0, false, 0, 1 },
                { "3,1002,90000000,-;", false, 0, true, 90.0, 1 },
                { "3,1002,90000000,-,caller=T4242;", false, 0, true, 90.0, 1 },
                { "12,1005,93000000,-;", false, 0, true, 93.0, 0 },     /* LOG_USER: a process wrote it */
                { "Nov 30 10:11:12 host myapp[999]: ", false, 0, false, 0, 0 },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                const struct prefixed *c = &cases[i];
                char line[512];
                snprintf(line, sizeof(line), "%sNVRM: Xid (PCI:0000:3b:00): 13, pid=1, name=a, msg", c->prefix);
                print_message("prefix: '%s'\n", c->prefix);
                struct xid_list l;
                assert_int_equal(parse(line, NULL, &l), 0);
                assert_int_equal(l.n, c->events);
                if (c->events) {
                        const struct xid_event *e = &l.ev[0];
                        assert_int_equal(e->xid, 13);
                        assert_string_equal(e->message, "msg");
                        assert_string_equal(e->raw, line);
                        assert_int_equal(e->time_known, c->time_known);
                        if (c->time_known)
                                assert_true(fabs(e->time - c->time) < 1e-5);
                        assert_int_equal(e->monotonic_known, c->mono_known);
                        if (c->mono_known)
                                assert_true(fabs(e->monotonic - c->mono) < 1e-6);
                }
                xid_list_free(&l);
        }
}

static void test_this_boot_and_seq(void **state)
{
        (void)state;
        struct kmsg_time_opts t = { .boot_time = 1796000000, .now = NOW };
        struct xid_list l;
        parse_expect("[  100.500000] NVRM: Xid (PCI:0000:3b:00): 79, x\n"
                     "3,77,200000000,-;NVRM: Xid (PCI:0000:3b:00): 48, y\n", &t, 2, &l);
        assert_true(l.ev[0].time_known);
        assert_true(fabs(l.ev[0].time - 1796000100.5) < 1e-6);
        assert_false(l.ev[0].seq_known);
        assert_true(l.ev[1].seq_known);
        assert_int_equal(l.ev[1].seq, 77);
        assert_true(fabs(l.ev[1].time - 1796000200.0) < 1e-6);
        xid_list_free(&l);
}

/* ---- multi-line messages written one line per record (syslog) ----------------------------- */

static void test_split_messages(void **state)
{
        (void)state;
        struct xid_list l;
        assert_int_equal(parse("Nov 29 11:30:00 zeus kernel: NVRM: API mismatch: the client has the version 535.104.05, but\n"
                               "Nov 29 11:30:00 zeus kernel: NVRM: this kernel module has the version 535.54.03.  Please\n"
                               "Nov 29 11:30:00 zeus kernel: NVRM: make sure that this kernel module and all NVIDIA driver\n"
                               "Nov 29 11:30:00 zeus kernel: NVRM: components have the same version.\n"
                               "Nov 29 11:31:00 zeus kernel: NVRM: The NVIDIA GPU 0000:05:00.0\n"
                               "Nov 29 11:31:00 zeus kernel: NVRM: (PCI ID: 10de:1eb8) installed in this system has\n"
                               "Nov 29 11:31:00 zeus kernel: NVRM: fallen off the bus and is not responding to commands.\n"
                               "Nov 29 11:32:00 zeus kernel: NVRM: The NVIDIA GPU 0000:07:00.0 (PCI ID: 10de:1b06)\n"
                               "Nov 29 11:32:00 zeus kernel: NVRM: installed in this system is not supported by the\n"
                               "Nov 29 11:32:00 zeus kernel: NVRM: NVIDIA 535.54.03 driver release.\n"
                               "Nov 29 11:33:00 zeus kernel: NVRM: A GPU crash dump has been created. If possible, please run\n"
                               "Nov 29 11:33:00 zeus kernel: NVRM: nvidia-bug-report.sh as root to collect this data before\n"
                               "Nov 29 11:33:00 zeus kernel: NVRM: the NVIDIA kernel module is unloaded.\n",
                               NULL, &l), 0);
        assert_int_equal(l.n, 4);
        assert_int_equal(l.ev[0].kind, XID_KIND_API_MISMATCH);
        assert_string_equal(l.ev[0].message, "API mismatch: the client has the version 535.104.05, but this kernel "
                                             "module has the version 535.54.03.  Please make sure that this kernel "
                                             "module and all NVIDIA driver components have the same version.");
        assert_non_null(strstr(l.ev[0].raw, "components have the same version."));
        assert_int_equal(l.ev[1].kind, XID_KIND_FALLEN_OFF_BUS);
        assert_int_equal(l.ev[1].xid, 79);
        assert_string_equal(l.ev[1].pci_bus_id, "0000:05:00.0");
        assert_int_equal(l.ev[2].kind, XID_KIND_INIT_FAILED);
        assert_string_equal(l.ev[2].pci_bus_id, "0000:07:00.0");
        assert_int_equal(l.ev[3].kind, XID_KIND_CRASH_DUMP);
        xid_list_free(&l);

        /* a start line whose other lines never come is still given out, at the end */
        parse_expect("NVRM: A GPU crash dump has been created. If possible, please run\n"
                     "NVRM: Xid (PCI:0000:3b:00): 13, x\n", NULL, 2, &l);
        assert_int_equal(l.ev[0].kind, XID_KIND_CRASH_DUMP);
        assert_int_equal(l.ev[1].xid, 13);
        xid_list_free(&l);
}

/* ---- companion lines ---------------------------------------------------------------------- */

static void test_companions(void **state)
{
        (void)state;
        struct xid_list l;
        /* osHandleGpuLost: the Xid line, then the NV_DEV_PRINTF line: one event */
        parse_expect("[ 5107.644336] NVRM: Xid (PCI:0000:2b:00): 79, pid=1234, name=python3, GPU has fallen off the bus.\n"
                     "[ 5107.644400] NVRM: GPU 0000:2b:00.0: GPU has fallen off the bus.\n"
                     "[ 5107.644500] NVRM: GPU 0000:2b:00.0: GPU serial number is 1652123456790.\n", NULL, 2, &l);
        assert_int_equal(l.ev[0].kind, XID_KIND_XID);
        assert_int_equal(l.ev[0].xid, 79);
        assert_int_equal(l.ev[1].kind, XID_KIND_OTHER);
        xid_list_free(&l);
        /* another GPU's loss is not a companion */
        parse_expect("[ 5107.644336] NVRM: Xid (PCI:0000:2b:00): 79, GPU has fallen off the bus.\n"
                     "[ 5107.644400] NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.\n", NULL, 2, &l);
        assert_int_equal(l.ev[1].kind, XID_KIND_FALLEN_OFF_BUS);
        assert_string_equal(l.ev[1].pci_bus_id, "0000:3b:00.0");
        xid_list_free(&l);
        /* nor is the same GPU's line an hour later */
        parse_expect("[ 1000.000000] NVRM: Xid (PCI:0000:2b:00): 79, GPU has fallen off the bus.\n"
                     "[ 4600.000000] NVRM: GPU 0000:2b:00.0: GPU has fallen off the bus.\n", NULL, 2, &l);
        xid_list_free(&l);
        /* RmInitAdapter failed! then the Linux layer's rm_init_adapter line */
        parse_expect("NVRM: GPU 0000:03:00.0: RmInitAdapter failed! (0x26:0xffff:1227)\n"
                     "NVRM: GPU 0000:03:00.0: rm_init_adapter failed, device minor number 2\n", NULL, 1, &l);
        assert_int_equal(l.ev[0].kind, XID_KIND_INIT_FAILED);
        assert_non_null(strstr(l.ev[0].message, "RmInitAdapter failed!"));
        xid_list_free(&l);
        /* a burst of GSP timeout lines of one GPU is one event; a later burst is another */
        parse_expect("[ 10.0] NVRM: GPU6 _kgspIsHeartbeatTimedOut: Heartbeat timed out, curtime 0x1\n"
                     "[ 10.1] NVRM: GPU6 _kgspLogRpcTimeout: ******** GSP Timeout ********\n"
                     "[ 10.2] NVRM: GPU6 _kgspLogRpcTimeout: Note: Please also check logs above.\n"
                     "[ 10.3] NVRM: GPU7 _kgspLogRpcTimeout: ******** GSP Timeout ********\n"
                     "[ 90.0] NVRM: GPU6 _kgspLogRpcTimeout: ******** GSP Timeout ********\n", NULL, 3, &l);
        assert_true(strncmp(l.ev[0].message, "GPU6", 4) == 0);
        assert_true(strncmp(l.ev[1].message, "GPU7", 4) == 0);
        assert_true(fabs(l.ev[2].monotonic - 90.0) < 1e-9);
        xid_list_free(&l);
}

static void test_not_nvidia(void **state)
{
        (void)state;
        struct xid_list l;
        parse_expect("[    0.000000] Linux version 6.8.0\n"
                     "[    3.100000] [drm] Initialized simpledrm 1.0.0 20200625 for simple-framebuffer.0 on minor 0\n"
                     "NVIDIA-GPU is a word in this sentence: DRM: not a device line\n"
                     "usb 1-1: new high-speed USB device number 3 using xhci_hcd\n"
                     "audit: type=1400 comm=\"NVRM: Xid (PCI:0000:3b:00): 79\"\n"
                     "python[12]: segfault at 0 NVRM: Xid (PCI:0000:3b:00): 79, x\n"
                     "\n\n   \n", NULL, 0, &l);
        xid_list_free(&l);
        /* a malformed Xid line is kept as an NVRM line, never as an Xid */
        parse_expect("NVRM: Xid (PCI:0000:3b:00: 79\nNVRM: Xid (PCI:0000:3b:00): x79\n", NULL, 2, &l);
        assert_int_equal(l.ev[0].kind, XID_KIND_OTHER);
        assert_int_equal(l.ev[0].xid, XID_NONE);
        assert_int_equal(l.ev[1].kind, XID_KIND_OTHER);
        xid_list_free(&l);
}

static void test_overlong_and_hostile(void **state)
{
        (void)state;
        size_t big = 100000;
        char *s = malloc(big + 200);
        assert_non_null(s);
        int n = snprintf(s, 200, "NVRM: Xid (PCI:0000:3b:00): 13, pid=5, name=a, ");
        memset(s + n, 'A', big);
        strcpy(s + n + big, "\nNVRM: Xid (PCI:0000:3b:00): 31, after\n");
        struct xid_list l;
        parse_expect(s, NULL, 2, &l);
        assert_int_equal(l.ev[0].xid, 13);
        assert_true(strlen(l.ev[0].message) < KMSG_LINE_MAX);
        assert_true(strlen(l.ev[0].raw) <= KMSG_LINE_MAX);
        assert_int_equal(l.ev[1].xid, 31);
        assert_string_equal(l.ev[1].message, "after");
        xid_list_free(&l);
        free(s);

        /* a process name with an escape sequence stays as data; JSON escapes it */
        parse_expect("3,1,1,-;NVRM: Xid (PCI:0000:3b:00): 13, pid=77, name=evil\\x1b[31mred\\x5c, boom\\xff", NULL, 1, &l);
        assert_string_equal(l.ev[0].process_name, "evil\033[31mred\\");
        assert_string_equal(l.ev[0].message, "boom\xff");
        struct buf b = BUF_INIT(0);
        assert_int_equal(esc_terminal(&b, l.ev[0].process_name, strlen(l.ev[0].process_name)), 0);
        assert_null(strchr(buf_str(&b), '\033'));
        buf_free(&b);
        json_t *j = xid_event_to_json(&l.ev[0]);
        assert_non_null(j);
        char *dump = json_dumps(j, JSON_ENSURE_ASCII);
        assert_non_null(dump);
        assert_null(strchr(dump, '\033'));
        assert_non_null(strstr(dump, "\"process_name\": \"evil\\u001B[31mred\\\\\""));
        assert_non_null(strstr(dump, "\"message\": \"boom\\uFFFD\""));
        free(dump);
        json_decref(j);
        xid_list_free(&l);
}

/* ---- fixture files ------------------------------------------------------------------------ */

struct fixture_case {
        const char *file;
        const char *kinds;      /* expected events: kind names (xid as its code) joined by ' ' */
};

static void test_fixture_files(void **state)
{
        (void)state;
        static const struct fixture_case cases[] = {
                { "dmesg.txt", "other other driver_load other gpu_uuid other 13 13 45 31 48 63 119 gsp_error 79 other "
                               "crash_dump sxid 94" },
                { "dmesg-T.txt", "driver_load 109 154 45" },
                { "journal-short-iso.txt", "rc_watchdog 8 gsp_error 120 fallen_off_bus init_failed 999" },
                { "syslog.txt", "31 api_mismatch fallen_off_bus fallen_off_bus 3" },
                { "kmsg-raw.txt", "driver_load 45 fallen_off_bus 13 149" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                char path[512], *data;
                size_t len;
                snprintf(path, sizeof(path), "%s/kmsg/%s", GV_FIXTURES, cases[i].file);
                assert_int_equal(read_file_at(-100, path, 1 << 20, &data, &len), 0);
                struct kmsg_time_opts t = { .boot_time = -1, .now = NOW };
                struct xid_list l = { 0 };
                assert_int_equal(xid_parse_log(data, len, &t, "file", &l), 0);
                struct buf got = BUF_INIT(0);
                for (size_t k = 0; k < l.n; k++) {
                        if (k)
                                buf_putc(&got, ' ');
                        if (l.ev[k].kind == XID_KIND_XID)
                                buf_printf(&got, "%d", l.ev[k].xid);
                        else
                                buf_puts(&got, xid_kind_name(l.ev[k].kind));
                }
                print_message("%s: %s\n", cases[i].file, buf_str(&got));
                assert_string_equal(buf_str(&got), cases[i].kinds);
                buf_free(&got);
                xid_list_free(&l);
                free(data);
        }
}

/* ---- PCI ids, GPU mapping, --since, merging, JSON ----------------------------------------- */

static void test_pci_parse(void **state)
{
        (void)state;
        static const struct { const char *in; int used; const char *out; } cases[] = {
                { "0000:3b:00", 10, "0000:3b:00.0" },
                { "0000:3B:00.0", 12, "0000:3b:00.0" },
                { "00000000:3B:00.0", 16, "0000:3b:00.0" },
                { "0019:01:00): 149", 10, "0019:01:00.0" },
                { "3b:00.1", 7, "0000:3b:00.1" },
                { "0000:3b:00.9", 10, "0000:3b:00.0" },         /* .9 is no function: not taken */
                { "0000:3b:20", -EINVAL, "" },                  /* device > 0x1f */
                { "00012:3b:00", -EINVAL, "" },
                { "0000:3b:000", -EINVAL, "" },
                { "...", -EINVAL, "" },
                { "", -EINVAL, "" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                char out[16] = "";
                assert_int_equal(xid_pci_parse(cases[i].in, strlen(cases[i].in), out), cases[i].used);
                if (cases[i].used > 0)
                        assert_string_equal(out, cases[i].out);
        }
}

static void test_map_gpus(void **state)
{
        (void)state;
        struct gpu_info gpus[2];
        memset(gpus, 0, sizeof(gpus));
        gpus[0].index = 0;
        strcpy(gpus[0].pci_bus_id, "0000:86:00.0");
        gpus[1].index = 1;
        strcpy(gpus[1].pci_bus_id, "00000000:3B:00.0");        /* as NVML spells it */
        struct gpu_report r = { .driver_present = true, .gpus = gpus, .n_gpus = 2 };
        struct xid_list l;
        parse_expect("NVRM: Xid (PCI:0000:3b:00): 13, a\n"
                     "NVRM: Xid (PCI:0000:86:00 GPU-I:01): 94, b\n"
                     "NVRM: Xid (PCI:0000:99:00): 31, c\n"
                     "nvidia-nvswitch0: SXid (PCI:0000:3b:00.0): 12028, d\n"
                     "NVRM: No NVIDIA devices probed.\n", NULL, 5, &l);
        assert_int_equal(xid_map_gpus(l.ev, l.n, &r), 2);
        assert_int_equal(l.ev[0].gpu_index, 1);
        assert_int_equal(l.ev[1].gpu_index, 0);
        assert_int_equal(l.ev[2].gpu_index, -1);        /* not a GPU of this host */
        assert_int_equal(l.ev[3].gpu_index, -1);        /* an NVSwitch is never a GPU */
        assert_int_equal(l.ev[4].gpu_index, -1);
        assert_int_equal(xid_map_gpus(l.ev, l.n, NULL), 0);
        xid_list_free(&l);
}

static void test_since(void **state)
{
        (void)state;
        double t;
        assert_int_equal(xid_parse_since("2h", NOW, &t), 0);
        assert_true(fabs(t - (NOW - 7200)) < 1e-6);
        assert_int_equal(xid_parse_since("90s", NOW, &t), 0);
        assert_true(fabs(t - (NOW - 90)) < 1e-6);
        assert_int_equal(xid_parse_since("1d", NOW, &t), 0);
        assert_true(fabs(t - (NOW - 86400)) < 1e-6);
        assert_int_equal(xid_parse_since("now", NOW, &t), 0);
        assert_true(fabs(t - NOW) < 1e-6);
        assert_int_equal(xid_parse_since("@1796033472", NOW, &t), 0);
        assert_true(fabs(t - 1796033472) < 1e-6);
        assert_int_equal(xid_parse_since("2026-11-30T10:11:12Z", NOW, &t), 0);
        assert_true(fabs(t - 1796033472) < 1e-6);
        assert_int_equal(xid_parse_since("2026-11-30 10:11", NOW, &t), 0);       /* TZ=UTC in this test */
        assert_true(fabs(t - 1796033460) < 1e-6);
        assert_int_equal(xid_parse_since("2026-11-30", NOW, &t), 0);
        assert_true(fabs(t - 1795996800) < 1e-6);
        assert_int_equal(xid_parse_since("2026-11-30T10:11:12+02:00", NOW, &t), 0);
        assert_true(fabs(t - (1796033472 - 7200)) < 1e-6);
        static const char *const bad[] = { "", "-1h", "yesterday", "2026-13-01", "2026-11-30T25:00", "2h ago",
                                           "@x", "2026-11-30T10:11:12Zjunk", "1w" };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                assert_int_equal(xid_parse_since(bad[i], NOW, &t), -EINVAL);
}

static void test_merge(void **state)
{
        (void)state;
        struct xid_list dst, src;
        assert_int_equal(parse("[Mon Nov 30 10:00:00 2026] NVRM: Xid (PCI:0000:3b:00): 13, a\n"
                               "[Mon Nov 30 10:00:20 2026] NVRM: Xid (PCI:0000:3b:00): 31, c\n", NULL, &dst), 0);
        assert_int_equal(parse("[Mon Nov 30 10:00:10 2026] NVRM: Xid (PCI:0000:3b:00): 48, b\n"
                               "NVRM: Xid (PCI:0000:3b:00): 79, untimed\n", NULL, &src), 0);
        assert_int_equal(xid_list_merge(&dst, &src, "nvml"), 0);
        assert_int_equal(src.n, 0);
        assert_int_equal(dst.n, 4);
        assert_int_equal(dst.ev[0].xid, 13);
        assert_int_equal(dst.ev[1].xid, 48);
        assert_string_equal(dst.ev[1].source, "nvml");
        assert_int_equal(dst.ev[2].xid, 31);
        assert_string_equal(dst.ev[2].source, "file");
        assert_int_equal(dst.ev[3].xid, 79);
        xid_list_free(&dst);

        /* the cap drops the oldest events and counts them */
        struct xid_list capped = { .max = 8 };
        for (int i = 0; i < 20; i++) {
                struct xid_event e;
                assert_int_equal(xid_parse_message("NVRM: Xid (PCI:0000:3b:00): 13, x", 33, &e), 1);
                e.seq_known = true;
                e.seq = (uint64_t)i;
                assert_int_equal(xid_list_push(&capped, &e), 0);
        }
        assert_true(capped.n <= 8);
        assert_int_equal(capped.n + capped.dropped, 20);
        assert_int_equal(capped.ev[capped.n - 1].seq, 19);
        xid_list_free(&capped);
}

static void test_json(void **state)
{
        (void)state;
        struct xid_list l;
        struct kmsg_time_opts t = { .boot_time = 1796000000, .now = NOW };
        assert_int_equal(parse("3,42,1500000,-;NVRM: Xid (PCI:0000:3b:00 GPU-I:03): 79, pid=12, name=py, GPU has fallen off the bus.\n"
                               "6,43,1600000,-;NVRM: loading NVIDIA UNIX x86_64 Kernel Module  535.183.01  Sun May 12 2024\n",
                               &t, &l), 0);
        assert_int_equal(l.n, 2);
        l.ev[0].gpu_index = 2;
        json_t *j = xid_event_to_json(&l.ev[0]);
        assert_non_null(j);
        /* the time twice (docs/json.md): RFC 3339 to the second, and the epoch with its fraction */
        assert_string_equal(json_string_value(json_object_get(j, "time")), "2026-11-30T00:53:21Z");
        assert_true(json_real_value(json_object_get(j, "time_epoch")) == 1796000001.5);
        assert_int_equal(json_integer_value(json_object_get(j, "seq")), 42);
        assert_int_equal(json_integer_value(json_object_get(j, "xid")), 79);
        assert_string_equal(json_string_value(json_object_get(j, "kind")), "xid");
        assert_string_equal(json_string_value(json_object_get(j, "pci_bus_id")), "0000:3b:00.0");
        assert_int_equal(json_integer_value(json_object_get(j, "gpu_index")), 2);
        assert_int_equal(json_integer_value(json_object_get(j, "gpu_instance")), 3);
        assert_true(json_is_null(json_object_get(j, "compute_instance")));
        assert_int_equal(json_integer_value(json_object_get(j, "pid")), 12);
        assert_string_equal(json_string_value(json_object_get(j, "process_name")), "py");
        assert_string_equal(json_string_value(json_object_get(j, "message")), "GPU has fallen off the bus.");
        assert_string_equal(json_string_value(json_object_get(j, "severity")), "critical");
        assert_string_equal(json_string_value(json_object_get(j, "action")), "reboot");
        assert_string_equal(json_string_value(json_object_get(j, "source")), "file");
        json_decref(j);
        j = xid_event_to_json(&l.ev[1]);
        assert_true(json_is_null(json_object_get(j, "xid")));
        assert_true(json_is_null(json_object_get(j, "pci_bus_id")));
        assert_true(json_is_null(json_object_get(j, "gpu_index")));
        assert_true(json_is_null(json_object_get(j, "pid")));
        assert_string_equal(json_string_value(json_object_get(j, "kind")), "driver_load");
        assert_string_equal(json_string_value(json_object_get(j, "driver_version")), "535.183.01");
        assert_string_equal(json_string_value(json_object_get(j, "severity")), "info");
        json_decref(j);
        xid_list_free(&l);

        char ts[48];
        assert_int_equal(xid_format_rfc3339(0, ts, sizeof(ts)), 0);
        assert_string_equal(ts, "1970-01-01T00:00:00Z");
        assert_int_equal(xid_format_rfc3339(-1, ts, sizeof(ts)), -ERANGE);
        assert_int_equal(xid_format_rfc3339(NAN, ts, sizeof(ts)), -ERANGE);
}


/* ---- reading the default log: scan's entry point ----------------------------------------- */

static void test_collect(void **state)
{
        (void)state;
        char dir[] = "/tmp/gv-xid-sim-XXXXXX", path[512], err[512];
        assert_non_null(mkdtemp(dir));
        struct xid_source_info info;
        struct xid_list l = { 0 };
        unsigned long overruns = 99;

        /* a simulated host without a kernel log: no events, no error */
        struct xid_source_opts o = { .sim_dir = dir };
        assert_int_equal(xid_collect(&o, &l, &info, err, sizeof(err), &overruns), 0);
        assert_true(info.no_log);
        assert_true(info.this_host);
        assert_int_equal(l.n, 0);
        assert_int_equal(overruns, 0);

        /* with DIR/kmsg: that file, its [seconds] stamps dated from this boot */
        snprintf(path, sizeof(path), "%s/kmsg", dir);
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fputs("3,7,5000000,-;NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=p, GPU has fallen off the bus.\n", f);
        fclose(f);
        assert_int_equal(xid_collect(&o, &l, &info, err, sizeof(err), NULL), 0);
        assert_false(info.no_log);
        assert_int_equal(info.source, KMSG_SRC_FILE);
        assert_string_equal(info.path, path);
        assert_int_equal(l.n, 1);
        assert_int_equal(l.ev[0].xid, 79);
        assert_true(l.ev[0].time_known);
        assert_true(l.ev[0].seq_known);
        assert_string_equal(l.ev[0].source, "file");
        xid_list_free(&l);
        unlink(path);

        /* --kmsg FILE wins over the simulated host; not this host unless this_boot */
        snprintf(path, sizeof(path), "%s/kmsg/dmesg-T.txt", GV_FIXTURES);
        struct xid_source_opts of = { .kmsg_path = path, .sim_dir = dir };
        assert_int_equal(xid_collect(&of, &l, &info, err, sizeof(err), NULL), 0);
        assert_false(info.this_host);
        assert_int_equal(l.n, 4);
        xid_list_free(&l);
        rmdir(dir);

        /* an unreadable kernel device: an error and one line, never an exit */
        struct xid_source_opts od = { .kmsg_dev = "/nonexistent/kmsg" };
        assert_int_equal(xid_collect(&od, &l, &info, err, sizeof(err), NULL), -ENOENT);
        assert_non_null(strstr(err, "/nonexistent/kmsg"));
        assert_int_equal(l.n, 0);
}

int main(void)
{
        setenv("TZ", "UTC", 1);
        tzset();
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_shapes),          cmocka_unit_test(test_driver_versions),
                cmocka_unit_test(test_prefixes),        cmocka_unit_test(test_this_boot_and_seq),
                cmocka_unit_test(test_split_messages),  cmocka_unit_test(test_companions),
                cmocka_unit_test(test_not_nvidia),      cmocka_unit_test(test_overlong_and_hostile),
                cmocka_unit_test(test_fixture_files),   cmocka_unit_test(test_pci_parse),
                cmocka_unit_test(test_map_gpus),        cmocka_unit_test(test_since),
                cmocka_unit_test(test_merge),           cmocka_unit_test(test_json),
                cmocka_unit_test(test_collect),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
