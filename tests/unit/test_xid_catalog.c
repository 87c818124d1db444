/* Unit tests for src/collect/xid_catalog.c: the catalogue against the reference's text, its
 * completeness, what ghostvram says per code and per event, and which recent Xid pages. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <jansson.h>

#include "collect/xid.h"

/* Every code of the reference's "Full catalogue" table (extracted with a script from
 * shared/reference/xid.md section 2 when this test was written). */
static const int reference_codes[] = {
        1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
        17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32,
        33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48,
        49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64,
        65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80,
        81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96,
        97, 98, 99, 100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 112,
        113, 114, 115, 116, 117, 118, 119, 120, 121, 122, 123, 124, 125, 126, 127, 128,
        129, 130, 131, 132, 133, 134, 135, 136, 137, 138, 139, 140, 141, 142, 143, 144,
        145, 146, 147, 148, 149, 150, 151, 152, 153, 154, 155, 156, 157, 158, 159, 160,
        161, 162, 163, 164, 165, 166, 167, 168, 169, 170, 171, 172,
};

/* Rows of that table, verbatim, for codes the tests check cell by cell. */
static const char *const reference_rows[] = {
        "| 8 | ROBUST_CHANNEL_FIFO_ERROR_IDLE_TIMEOUT | GPU stopped processing | A100,H100,B100,GB200 | RESTART_APP | CONTACT_SUPPORT | - | (same) | Drv/App/Bus/Therm |",
        "| 13 | ROBUST_CHANNEL_GR_EXCEPTION/ROBUST_CHANNEL_GR_ERROR_SW_NOTIFY | Graphics Engine Exception | A100,H100,B100,GB200 | RESTART_APP | WORKFLOW_XID_13 | - | (same) | HW/Drv/App/SysMem/Bus/Therm/FB |",
        "| 31 | ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT | GPU memory page fault | A100,H100,B100,GB200 | RESTART_APP | WORKFLOW_XID_31 | - | (same) | HW/Drv/App |",
        "| 45 | ROBUST_CHANNEL_PREEMPTIVE_REMOVAL | Preemptive cleanup, due to previous errors -- Most likely to see when running multiple cuda applications and hitting a DBE | A100,H100,B100,GB200 | WORKFLOW_XID_45 | Solo: RESTART_FM; Not Solo: IGNORE (follow other Xid) | - | Preemptive cleanup, due to previous errors – Most likely to see when running multiple cuda applications and hitting a DBE. | Drv/App |",
        "| 48 | ROBUST_CHANNEL_GPU_ECC_DBE | Double Bit ECC Error | A100,H100,B100,GB200 | WORKFLOW_XID_48 | WORKFLOW_XID_48 | CUDA 12.7; GPU driver R565 | (same) | HW |",
        "| 63 | INFOROM_DRAM_RETIREMENT_EVENT | GPU memory remapping event | A100,H100,B100,GB200 | IGNORE | IGNORE | CUDA 12.7; GPU driver R565 | ECC page retirement or row remapping recording event | HW/Drv/FB |",
        "| 79 | ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS | GPU has fallen off the bus | A100,H100,B100,GB200 | RESTART_BM | CONTACT_SUPPORT | CUDA 12.7; GPU driver R565 | (same) | HW/Drv/SysMem/Bus/Therm |",
        "| 94 | ROBUST_CHANNEL_CONTAINED_ERROR | Contained memory error | A100,H100,B100,GB200 | RESTART_APP | IGNORE (sympathetic) | CUDA 12.7; GPU driver R565 | Contained ECC error | HW/Drv/FB |",
        "| 95 | ROBUST_CHANNEL_UNCONTAINED_ERROR | Uncontained memory error | A100,H100,B100,GB200 | RESET_GPU | IGNORE (sympathetic) | CUDA 12.7; GPU driver R565 | Uncontained ECC error | HW/Drv/FB |",
        "| 119 | GSP_RPC_TIMEOUT | GSP RPC Timeout | A100,H100,B100,GB200 | RESET_GPU | INVESTIGATE_SW | - | (same) | HW/Drv/SysMem/Bus/Therm/FB |",
        "| 120 | GSP_ERROR | GSP Error | A100,H100,B100,GB200 | RESET_GPU | INVESTIGATE_SW | CUDA 12.7; GPU driver R565 | (same) | HW/Drv/SysMem/Bus/Therm/FB |",
        "| 154 | GPU_RECOVERY_ACTION_CHANGED | GPU Recovery Action Changed | A100,H100,B100,GB200 | XID_154 | N/A Informational only regarding another Xid | - | - | - |",
        "| 162 | PSHC_REENGAGED | Power Smoothing HW Circuitry capability reengaged | B100,GB200 | - | - | - | - | - |",
        "| 172 | UNCORRECTABLE_SRAM_ERROR | Additional to Xid 48 providing more details on particulars of fault to differentiate DRAM/SRAM | A100,H100,B100,GB200 | - | - | - | - | - |",
};

static void test_complete(void **state)
{
        (void)state;
        size_t n;
        const struct xid_info *all = xid_catalog_all(&n);
        size_t nref = sizeof(reference_codes) / sizeof(reference_codes[0]);
        assert_int_equal(nref, 172);
        assert_int_equal(n, nref);
        for (size_t i = 0; i < nref; i++) {
                const struct xid_info *x = xid_catalog_lookup(reference_codes[i]);
                assert_non_null(x);
                assert_int_equal(x->code, reference_codes[i]);
                assert_true(strlen(x->mnemonic) > 0);
                assert_true(strlen(x->description) > 0);
                if (i)
                        assert_true(all[i].code > all[i - 1].code); /* sorted: lookup is a bisection */
        }
        assert_null(xid_catalog_lookup(0));
        assert_null(xid_catalog_lookup(173));
        assert_null(xid_catalog_lookup(999));
        assert_null(xid_catalog_lookup(-1));
}

static void test_rows_match_reference(void **state)
{
        (void)state;
        for (size_t i = 0; i < sizeof(reference_rows) / sizeof(reference_rows[0]); i++) {
                int code = (int)strtol(reference_rows[i] + 2, NULL, 10);
                const struct xid_info *x = xid_catalog_lookup(code);
                assert_non_null(x);
                char row[1024];
                snprintf(row, sizeof(row), "| %u | %s | %s | %s | %s | %s | %s | %s | %s |", x->code, x->mnemonic,
                         x->description, x->applies_to, x->immediate, x->investigatory, x->xid154, x->old_name,
                         x->causes);
                assert_string_equal(row, reference_rows[i]);
        }
}

/* Every code gets a severity, an action and advice; every bucket the table uses is known. */
static void test_every_code_explained(void **state)
{
        (void)state;
        size_t n;
        const struct xid_info *all = xid_catalog_all(&n);
        for (size_t i = 0; i < n; i++) {
                struct xid_explanation x;
                xid_explain((int)all[i].code, &x);
                print_message("Xid %u\n", all[i].code);
                assert_ptr_equal(x.info, &all[i]);
                assert_true(x.name && *x.name);
                assert_true(x.todo && *x.todo);
                assert_int_not_equal(x.severity, XID_SEV_UNKNOWN);
                assert_int_not_equal(x.action, XID_ACT_UNKNOWN);
                assert_true(strcmp(all[i].immediate, "-") == 0 || xid_bucket_text(all[i].immediate));
                assert_true(strcmp(all[i].investigatory, "-") == 0 || xid_bucket_text(all[i].investigatory) ||
                            strncmp(all[i].investigatory, "Solo:", 5) == 0 ||
                            strncmp(all[i].investigatory, "N/A", 3) == 0);
        }
}

struct expect {
        int code;
        const char *name;
        enum xid_severity sev;
        enum xid_action act;
        enum xid_reset reset;
        const char *in_text;    /* a phrase the explanation must carry (meaning, todo or note) */
};

static void test_key_codes(void **state)
{
        (void)state;
        static const struct expect cases[] = {
                { 79, "GPU has fallen off the bus", XID_SEV_CRITICAL, XID_ACT_REBOOT, XID_RESET_REBOOT,
                  "a GPU reset cannot bring the GPU back" },
                { 45, "Preemptive cleanup", XID_SEV_INFO, XID_ACT_FOLLOW_OTHER, XID_RESET_NO,
                  "Routine when a job is killed" },
                { 48, "Double-bit ECC error", XID_SEV_ERROR, XID_ACT_RESET_GPU, XID_RESET_GPU, "drain the node and reset" },
                { 119, "GSP RPC timeout", XID_SEV_ERROR, XID_ACT_RESET_GPU, XID_RESET_GPU, "not necessarily the culprit" },
                { 120, "GSP error", XID_SEV_ERROR, XID_ACT_RESET_GPU, XID_RESET_GPU, "stuck in the driver" },
                { 154, "GPU recovery action changed", XID_SEV_WARNING, XID_ACT_SEE_MESSAGE, XID_RESET_DEPENDS,
                  "Node Reboot Required" },
                { 63, "Memory row remapping / page retirement event", XID_SEV_WARNING, XID_ACT_NONE,
                  XID_RESET_WHEN_CONVENIENT, "next GPU reset" },
                { 94, "Contained memory error", XID_SEV_WARNING, XID_ACT_RESTART_APP, XID_RESET_WHEN_CONVENIENT,
                  "reset the GPU when convenient" },
                { 95, "Uncontained memory error", XID_SEV_ERROR, XID_ACT_RESET_GPU, XID_RESET_GPU, "before restarting" },
                { 13, "Graphics engine exception", XID_SEV_WARNING, XID_ACT_RESTART_APP, XID_RESET_NO, "compute-sanitizer" },
                { 147, "NVLink5 error", XID_SEV_ERROR, XID_ACT_RESET_GPU, XID_RESET_DEPENDS, "Xid 144-150 Decode" },
                /* from the table only: RESTART_APP bucket, catalog description as name */
                { 68, "Video decoder (NVDEC0) exception", XID_SEV_WARNING, XID_ACT_RESTART_APP, XID_RESET_NO, "" },
                { 82, "NVJPG0 Error", XID_SEV_WARNING, XID_ACT_RESTART_APP, XID_RESET_NO, "Restart the application" },
                { 78, "vGPU Start Error", XID_SEV_WARNING, XID_ACT_UPDATE_SOFTWARE, XID_RESET_NO, "driver" },
                { 151, "Key rotation Error", XID_SEV_WARNING, XID_ACT_RESTART_VM, XID_RESET_NO, "VM" },
                /* an "Unused" code is named by the pre-Ampere document */
                { 16, "Display engine hung", XID_SEV_WARNING, XID_ACT_CONTACT_SUPPORT, XID_RESET_UNKNOWN, "support" },
                /* no action in the catalog: ghostvram's reading, said so */
                { 162, "Power Smoothing HW Circuitry capability reengaged", XID_SEV_INFO, XID_ACT_NONE, XID_RESET_NO,
                  "ghostvram's reading" },
                { 169, "Internal micro-controller halt", XID_SEV_ERROR, XID_ACT_RESET_GPU, XID_RESET_GPU, "" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                const struct expect *c = &cases[i];
                struct xid_explanation x;
                xid_explain(c->code, &x);
                print_message("Xid %d\n", c->code);
                assert_string_equal(x.name, c->name);
                assert_int_equal(x.severity, c->sev);
                assert_int_equal(x.action, c->act);
                assert_int_equal(x.reset, c->reset);
                char all[4096];
                snprintf(all, sizeof(all), "%s | %s | %s", x.meaning ? x.meaning : "", x.todo ? x.todo : "",
                         x.note ? x.note : "");
                assert_non_null(strstr(all, c->in_text));
        }
}

static void test_unknown_codes(void **state)
{
        (void)state;
        static const int codes[] = { 0, 173, 999, 4000 };
        for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
                struct xid_explanation x;
                xid_explain(codes[i], &x);
                assert_null(x.info);
                assert_int_equal(x.code, codes[i]);
                assert_string_equal(x.name, "Unknown Xid");
                assert_int_equal(x.severity, XID_SEV_UNKNOWN);
                assert_int_equal(x.action, XID_ACT_UNKNOWN);
                json_t *j = xid_explanation_to_json(&x);
                assert_non_null(j);
                assert_false(json_is_true(json_object_get(j, "known")));
                assert_string_equal(json_string_value(json_object_get(j, "action")), "unknown");
                json_decref(j);
        }
        struct xid_explanation x;
        xid_explain(999, &x);
        assert_non_null(strstr(x.meaning, "NVML reports 999"));
}

static void test_causes_and_names(void **state)
{
        (void)state;
        struct buf b = BUF_INIT(0);
        assert_int_equal(xid_causes_text("HW/Drv/SysMem/Bus/Therm", &b), 0);
        assert_string_equal(buf_str(&b), "hardware error, driver error, system memory corruption, bus error, thermal issue");
        buf_reset(&b);
        assert_int_equal(xid_causes_text("-", &b), 0);
        assert_string_equal(buf_str(&b), "not stated");
        buf_free(&b);
        assert_string_equal(xid_bucket_text("RESTART_BM"), "restart the bare-metal machine");
        assert_null(xid_bucket_text("NO_SUCH_BUCKET"));
        assert_string_equal(xid_action_name(XID_ACT_REBOOT), "reboot");
        assert_string_equal(xid_action_name(XID_ACT_RESET_GPU), "reset_gpu");
        assert_string_equal(xid_action_name((enum xid_action)1000), "unknown");
        assert_string_equal(xid_severity_name(XID_SEV_CRITICAL), "critical");
        assert_string_equal(xid_kind_name(XID_KIND_FALLEN_OFF_BUS), "fallen_off_bus");
        assert_string_equal(xid_kind_name(XID_KIND_SXID), "sxid");
        assert_string_equal(xid_kind_name((enum xid_kind)77), "other");
        for (int k = 0; k < XID_KIND_COUNT; k++)
                assert_non_null(xid_kind_name((enum xid_kind)k));
        struct xid_explanation x;
        xid_explain(79, &x);
        json_t *j = xid_explanation_to_json(&x);
        assert_string_equal(json_string_value(json_object_get(j, "mnemonic")), "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS");
        assert_string_equal(json_string_value(json_object_get(json_object_get(j, "catalog"), "immediate_action")),
                            "RESTART_BM");
        assert_string_equal(json_string_value(json_object_get(j, "action")), "reboot");
        json_decref(j);
}

static void assess_line(const char *line, struct xid_assessment *a)
{
        struct xid_event e;
        assert_int_equal(xid_parse_message(line, strlen(line), &e), 1);
        xid_event_assess(&e, a);
        xid_event_free(&e);
}

static void test_event_assessment(void **state)
{
        (void)state;
        static const struct {
                const char *line;
                enum xid_severity sev;
                enum xid_action act;
        } cases[] = {
                { "NVRM: Xid (PCI:0000:3e:00): 154, GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)",
                  XID_SEV_CRITICAL, XID_ACT_REBOOT },
                { "NVRM: Xid (PCI:0000:3e:00): 154, GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)",
                  XID_SEV_ERROR, XID_ACT_RESET_GPU },
                { "NVRM: Xid (PCI:0000:3e:00): 154, GPU recovery action changed from 0x0 (None) to 0x4 (Drain and Reset)",
                  XID_SEV_ERROR, XID_ACT_DRAIN_AND_RESET },
                { "NVRM: Xid (PCI:0000:3e:00): 154, GPU recovery action changed from 0x1 (GPU Reset Required) to 0x0 (None)",
                  XID_SEV_INFO, XID_ACT_NONE },
                { "NVRM: Xid (PCI:0000:3e:00): 154, GPU recovery action changed from 0x0 (None) to 0x5 (Recover IMEX Domain)",
                  XID_SEV_WARNING, XID_ACT_SEE_MESSAGE },
                { "NVRM: Xid (PCI:0000:3b:00): 45, pid=1, name=p, Ch 00000001 caused by previous Xid 149",
                  XID_SEV_INFO, XID_ACT_FOLLOW_OTHER },
                { "NVRM: Xid (PCI:0000:3b:00): 999, x", XID_SEV_UNKNOWN, XID_ACT_UNKNOWN },
                { "NVRM: GPU 0000:2b:00.0: GPU has fallen off the bus.", XID_SEV_CRITICAL, XID_ACT_REBOOT },
                { "nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 32 x", XID_SEV_WARNING, XID_ACT_NONE },
                { "nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 20034, Fatal, Link 32 x", XID_SEV_ERROR,
                  XID_ACT_CONTACT_SUPPORT },
                { "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  535.183.01  Sun May 12 19:39:15 UTC 2024",
                  XID_SEV_INFO, XID_ACT_NONE },
                { "NVRM: GPU 0000:01:00.0: RmInitAdapter failed! (0x26:0xffff:1227)", XID_SEV_ERROR, XID_ACT_REBOOT },
                { "NVRM: A GPU crash dump has been created. If possible, please run", XID_SEV_WARNING, XID_ACT_BUG_REPORT },
                { "NVRM: GPU6 _kgspIsHeartbeatTimedOut: Heartbeat timed out", XID_SEV_ERROR, XID_ACT_RESET_GPU },
                { "NVRM: krcWatchdog_IMPL: RC watchdog: GPU is probably locked!", XID_SEV_WARNING, XID_ACT_FOLLOW_OTHER },
                { "NVRM: API mismatch: the client has the version 1, but", XID_SEV_ERROR, XID_ACT_UPDATE_SOFTWARE },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct xid_assessment a;
                print_message("%s\n", cases[i].line);
                assess_line(cases[i].line, &a);
                assert_int_equal(a.severity, cases[i].sev);
                assert_int_equal(a.action, cases[i].act);
                assert_non_null(a.title);
                assert_non_null(a.advice);
        }
        struct xid_assessment a;
        assess_line("NVRM: GPU6 _kgspIsHeartbeatTimedOut: Heartbeat timed out", &a);
        assert_non_null(strstr(a.note, "not necessarily the culprit"));
}

/* ---- which recent Xid pages (xid_recent_worst) ---- */

#define NOW 1800000000.0

static struct xid_event ev_at(enum xid_kind kind, int xid, uint64_t seq, double age, const char *bus)
{
        struct xid_event e;
        memset(&e, 0, sizeof(e));
        e.kind = kind;
        e.xid = xid;
        e.caused_by = e.sxid = XID_NONE;
        e.gpu_index = e.gpu_instance = e.compute_instance = -1;
        e.seq_known = true;
        e.seq = seq;
        e.time_known = true;
        e.time = NOW - age;
        snprintf(e.pci_bus_id, sizeof(e.pci_bus_id), "%s", bus);
        return e;
}

static void test_recent_worst(void **state)
{
        (void)state;
        struct gpu_info g;
        memset(&g, 0, sizeof(g));
        g.index = 1;
        snprintf(g.pci_bus_id, sizeof(g.pci_bus_id), "0000:43:00.0");
        const char *b1 = "0000:43:00.0", *b0 = "0000:1b:00.0";
        struct xid_recent x = { 0 };
        struct xid_event load = ev_at(XID_KIND_DRIVER_LOAD, XID_NONE, 10, 3600, "");
        struct {
                const char *what;
                struct xid_event ev[3];
                size_t n;
                double window;
                int want_xid;           /* 0: nothing pages */
                enum xid_severity sev;
                double age;
        } cases[] = {
                { "fresh 79", { load, ev_at(XID_KIND_XID, 79, 20, 5, b1) }, 2, 600, 79, XID_SEV_CRITICAL, 5 },
                { "79 older than the window", { load, ev_at(XID_KIND_XID, 79, 20, 5, b1) }, 2, 2, 0, 0, 0 },
                { "window 0: never", { load, ev_at(XID_KIND_XID, 79, 20, 5, b1) }, 2, 0, 0, 0, 0 },
                { "79 before the driver's load", { ev_at(XID_KIND_XID, 79, 5, 5, b1), load }, 2, 600, 0, 0, 0 },
                { "79 and no load line", { ev_at(XID_KIND_XID, 79, 5, 5, b1) }, 1, 600, 79, XID_SEV_CRITICAL, 5 },
                { "fallen off the bus, no Xid line", { load, ev_at(XID_KIND_FALLEN_OFF_BUS, 79, 20, 5, b1) }, 2, 600, 79,
                  XID_SEV_CRITICAL, 5 },
                { "31: severity warning", { load, ev_at(XID_KIND_XID, 31, 20, 5, b1) }, 2, 600, 0, 0, 0 },
                { "48: severity error", { load, ev_at(XID_KIND_XID, 48, 20, 60, b1) }, 2, 600, 48, XID_SEV_ERROR, 60 },
                { "79 beats a later 48", { load, ev_at(XID_KIND_XID, 79, 20, 90, b1), ev_at(XID_KIND_XID, 48, 21, 5, b1) },
                  3, 600, 79, XID_SEV_CRITICAL, 90 },
                { "the later of two 48", { load, ev_at(XID_KIND_XID, 48, 20, 90, b1), ev_at(XID_KIND_XID, 48, 21, 5, b1) },
                  3, 600, 48, XID_SEV_ERROR, 5 },
                { "another GPU's 79", { load, ev_at(XID_KIND_XID, 79, 20, 5, b0) }, 2, 600, 0, 0, 0 },
                { "slightly ahead of the clock", { load, ev_at(XID_KIND_XID, 79, 20, -30, b1) }, 2, 600, 79,
                  XID_SEV_CRITICAL, 0 },
                { "far ahead: another clock", { load, ev_at(XID_KIND_XID, 79, 20, -300, b1) }, 2, 600, 0, 0, 0 },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                bool got = xid_recent_worst(cases[i].ev, cases[i].n, &g, false, "0000:43:00.0", NOW, cases[i].window, &x);
                if (got != (cases[i].want_xid != 0))
                        fail_msg("%s: pages %d", cases[i].what, got);
                if (!got)
                        continue;
                if (x.event->xid != cases[i].want_xid || x.severity != cases[i].sev || x.age_s < cases[i].age - 0.01 ||
                    x.age_s > cases[i].age + 0.01)
                        fail_msg("%s: Xid %d severity %d age %.2f", cases[i].what, x.event->xid, x.severity, x.age_s);
                xid_recent_clear(&x);
        }
        /* the words: the event, its age, and what to do (reboot after a 79, the reset command after a 48) */
        struct xid_event e[2] = { load, ev_at(XID_KIND_XID, 79, 20, 5, b1) };
        assert_true(xid_recent_worst(e, 2, &g, false, "0000:43:00.0", NOW, 600, &x));
        assert_string_equal(x.summary, "Xid 79 (GPU has fallen off the bus) 5 s ago");
        assert_string_equal(x.next_step, "drain the node and reboot it; a GPU reset does not bring back GPU 1 "
                                         "(`ghostvram xid explain 79`)");
        xid_recent_clear(&x);
        e[1] = ev_at(XID_KIND_XID, 48, 20, 300, b1);
        assert_true(xid_recent_worst(e, 2, &g, false, "0000:43:00.0", NOW, 600, &x));
        assert_string_equal(x.summary, "Xid 48 (Double-bit ECC error) 5 min ago");
        assert_non_null(strstr(x.next_step, "`sudo nvidia-smi --gpu-reset -i 0000:43:00.0`"));
        xid_recent_clear(&x);
        /* by index when the log is this host's; a time-less event cannot be placed */
        e[1] = ev_at(XID_KIND_XID, 79, 20, 5, "");
        e[1].gpu_index = 1;
        assert_true(xid_recent_worst(e, 2, &g, true, "0000:43:00.0", NOW, 600, &x));
        xid_recent_clear(&x);
        assert_false(xid_recent_worst(e, 2, &g, false, "0000:43:00.0", NOW, 600, &x));
        e[1].time_known = false;
        assert_false(xid_recent_worst(e, 2, &g, true, "0000:43:00.0", NOW, 600, &x));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_complete),                cmocka_unit_test(test_rows_match_reference),
                cmocka_unit_test(test_every_code_explained),    cmocka_unit_test(test_key_codes),
                cmocka_unit_test(test_unknown_codes),           cmocka_unit_test(test_causes_and_names),
                cmocka_unit_test(test_event_assessment),        cmocka_unit_test(test_recent_worst),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
