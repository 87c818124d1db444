/* Unit tests for collect/gpu.c and gpu_json.c: bus id normalisation, driver versions, and the
 * bundle round trip (what --save-bundle writes, --from-bundle must read back the same). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "collect/gpu.h"
#include "collect/gpu_json.h"

static void test_pci_normalize(void **state)
{
        (void)state;
        static const struct { const char *in; int ret; const char *out; } c[] = {
                { "00000000:3B:00.0", 0, "0000:3b:00.0" },      /* NVML busId (v3) */
                { "0000:3B:00.0", 0, "0000:3b:00.0" },          /* busIdLegacy */
                { "3b:00.0", 0, "0000:3b:00.0" },               /* no domain */
                { "0001:C1:1F.7", 0, "0001:c1:1f.7" },
                { "PCI:0000:01:00", -EINVAL, NULL },
                { "0000:3b:20.0", -EINVAL, NULL },              /* device > 0x1f */
                { "0000:3b:00.8", -EINVAL, NULL },              /* function > 7 */
                { "0000:3b:00.0x", -EINVAL, NULL },
                { "", -EINVAL, NULL },
        };
        for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
                char out[32] = "";
                assert_int_equal(pci_bus_id_normalize(c[i].in, out, sizeof(out)), c[i].ret);
                if (c[i].out)
                        assert_string_equal(out, c[i].out);
        }
}

static void test_driver_version(void **state)
{
        (void)state;
        assert_true(driver_version_at_least("535.113.01", 535, 113, 1));
        assert_false(driver_version_at_least("535.104.05", 535, 113, 1));
        assert_true(driver_version_at_least("550.54.14", 535, 113, 1));
        assert_false(driver_version_at_least("470.42.01", 535, 113, 1));
        assert_true(driver_version_at_least("535.54.03", 535, 43, 0));
        assert_false(driver_version_at_least("535.54.03", 535, 87, 0));
        assert_true(driver_version_at_least("560", 535, 113, 1));
        assert_false(driver_version_at_least("", 1, 0, 0));
        assert_false(driver_version_at_least("abc", 1, 0, 0));
}

static void test_bundle_round_trip(void **state)
{
        (void)state;
        struct gpu_report r = { .driver_present = true, .pid_mode = GPU_PID_HOST, .sample_time = 12.5 };
        snprintf(r.backend, sizeof(r.backend), "nvml");
        snprintf(r.driver_version, sizeof(r.driver_version), "470.42.01");
        struct gpu_info g[2];
        memset(g, 0, sizeof(g));
        struct gpu_proc procs[2] = {
                { .pid = 31300, .used_bytes = 2ull << 30, .used_known = true, .gpu_instance = GPU_INSTANCE_NONE,
                  .compute_instance = GPU_INSTANCE_NONE, .kinds = GPU_PROC_COMPUTE | GPU_PROC_GRAPHICS },
                { .pid = 40000, .used_known = false, .gpu_instance = 1, .compute_instance = 0, .kinds = GPU_PROC_MPS },
        };
        g[0].memory_known = true;
        g[0].memory_api = 1;
        g[0].total_bytes = 1000;
        g[0].used_bytes = 600;
        g[0].free_bytes = 400;
        g[0].persistence = 1;
        g[0].mig_mode = -1;
        g[0].procs = procs;
        g[0].n_procs = 2;
        g[0].procs_known = true;
        snprintf(g[0].procs_api, sizeof(g[0].procs_api), "v2");
        snprintf(g[0].name, sizeof(g[0].name), "GPU \"quoted\" \xff name");
        g[1].index = 1;
        g[1].status = GPU_TIMEOUT;
        g[1].persistence = g[1].mig_mode = -1;
        snprintf(g[1].status_message, sizeof(g[1].status_message), "GPU 1: driver did not answer within 5 s");
        gpu_info_add_error(&g[1], "memory", -1, "driver did not answer");
        r.gpus = g;
        r.n_gpus = 2;

        r.sample_time = 1796140969.625;
        json_t *doc = gpu_report_to_json(&r);
        /* schema 2: the time as text to the second, the epoch with its fraction */
        const json_t *d = json_object_get(doc, "driver");
        assert_string_equal(json_string_value(json_object_get(d, "sample_time")), "2026-12-01T16:02:49Z");
        assert_true(json_real_value(json_object_get(d, "sample_time_epoch")) == 1796140969.625);
        struct gpu_report *back;
        assert_int_equal(gpu_report_from_json(doc, &back), 0);
        assert_true(back->sample_time == 1796140969.625);
        gpu_report_free(back);
        /* a bundle recorded with schema 1 has the number in sample_time */
        json_object_del((json_t *)d, "sample_time_epoch");
        json_object_set_new((json_t *)d, "sample_time", json_real(1796140000.5));
        assert_int_equal(gpu_report_from_json(doc, &back), 0);
        json_decref(doc);
        assert_true(back->sample_time == 1796140000.5);
        assert_true(back->driver_present);
        assert_int_equal(back->pid_mode, GPU_PID_HOST);
        assert_string_equal(back->driver_version, "470.42.01");
        assert_int_equal(back->n_gpus, 2);
        const struct gpu_info *b = &back->gpus[0];
        assert_int_equal(b->memory_api, 1);
        assert_true(b->used_bytes == 600 && b->total_bytes == 1000);
        assert_int_equal(b->persistence, 1);
        assert_int_equal(b->mig_mode, -1);
        assert_int_equal(b->n_procs, 2);
        assert_int_equal(b->procs[0].pid, 31300);
        assert_true(b->procs[0].used_bytes == 2ull << 30);
        assert_int_equal(b->procs[0].kinds, GPU_PROC_COMPUTE | GPU_PROC_GRAPHICS);
        assert_int_equal(b->procs[0].gpu_instance, GPU_INSTANCE_NONE);
        assert_false(b->procs[1].used_known);
        assert_int_equal(b->procs[1].gpu_instance, 1);
        assert_int_equal(b->procs[1].compute_instance, 0);
        /* invalid UTF-8 was repaired, not dropped */
        assert_non_null(strstr(b->name, "\"quoted\" \xef\xbf\xbd name"));
        assert_int_equal(back->gpus[1].status, GPU_TIMEOUT);
        assert_int_equal(back->gpus[1].n_errors, 1);
        assert_int_equal(back->gpus[1].errors[0].nvml_code, -1);
        gpu_report_free(back);
        free(g[1].errors);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_pci_normalize),
                cmocka_unit_test(test_driver_version),
                cmocka_unit_test(test_bundle_round_trip),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
