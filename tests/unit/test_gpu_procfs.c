/* Unit tests for collect/gpu_procfs.c: the nvidia module's information file and the rule that
 * gives GPUs NVML could not name (a lost handle) the bus id and UUID of the module's entries. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "collect/gpu.h"
#include "collect/gpu_procfs.h"

/* as kernel-open/nvidia/nv-procfs.c prints it */
static const char info_h100[] =
        "Model: \t\t NVIDIA H100 80GB HBM3\n"
        "IRQ:   \t\t 257\n"
        "GPU UUID: \t GPU-415fbc91-61a1-89d5-49b4-809ba8e2a07e\n"
        "Video BIOS: \t 96.00.99.00.01\n"
        "Bus Type: \t PCIe\n"
        "DMA Size: \t 52 bits\n"
        "DMA Mask: \t 0xfffffffffffff\n"
        "Bus Location: \t 0000:43:00.0\n"
        "Device Minor: \t 1\n"
        "GPU Excluded:\t No\n";

static void test_parse(void **state)
{
        (void)state;
        struct gpu_procfs_entry e;
        assert_int_equal(gpu_procfs_parse_information(info_h100, strlen(info_h100), &e), 0);
        assert_string_equal(e.pci_bus_id, "0000:43:00.0");
        assert_string_equal(e.uuid, "GPU-415fbc91-61a1-89d5-49b4-809ba8e2a07e");
        assert_true(e.minor_known);
        assert_int_equal(e.minor, 1);

        static const struct {
                const char *text;
                int ret;
                const char *bus, *uuid;
                int minor; /* -1 unknown */
        } c[] = {
                /* upper-case hex and a CRLF: normalised */
                { "Bus Location: \t 0000:DF:00.0\r\nGPU UUID: \t GPU-ABCD\r\n", 0, "0000:df:00.0", "GPU-ABCD", -1 },
                /* a placeholder UUID is no UUID */
                { "GPU UUID: \t GPU-?\?\?\?\?\?\?\?-?\?\?\?-?\?\?\?-?\?\?\?-?\?\?\?\?\?\?\?\?\?\?\?\nBus Location: \t 0000:1b:00.0\n", 0,
                  "0000:1b:00.0", "", -1 },
                { "GPU UUID: \t N/A\nBus Location: \t 0000:1b:00.0\nDevice Minor: \t x\n", 0, "0000:1b:00.0", "", -1 },
                /* no bus location, a bad one, nothing */
                { "GPU UUID: \t GPU-1234\nDevice Minor: \t 0\n", -EINVAL, NULL, NULL, -1 },
                { "Bus Location: \t 0000:1b:20.0\n", -EINVAL, NULL, NULL, -1 },
                { "", -EINVAL, NULL, NULL, -1 },
                /* a last line without a newline; a value too long is skipped */
                { "Bus Location: \t 0000:1b:00.0\nDevice Minor: \t 7", 0, "0000:1b:00.0", "", 7 },
                { "Bus Location: \t 0000:1b:00.0\nGPU UUID: \t GPU-0123456789012345678901234567890123456789012345678901234567890123456789\n",
                  0, "0000:1b:00.0", "", -1 },
        };
        for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
                memset(&e, 0, sizeof(e));
                assert_int_equal(gpu_procfs_parse_information(c[i].text, strlen(c[i].text), &e), c[i].ret);
                if (c[i].ret)
                        continue;
                assert_string_equal(e.pci_bus_id, c[i].bus);
                assert_string_equal(e.uuid, c[i].uuid);
                assert_int_equal(e.minor_known, c[i].minor >= 0);
                if (c[i].minor >= 0)
                        assert_int_equal(e.minor, c[i].minor);
        }
        /* not NUL-terminated: the length is the limit */
        char buf[64];
        memcpy(buf, "Bus Location: \t 0000:1b:00.0\n", 29);
        memset(buf + 29, 'x', sizeof(buf) - 29);
        assert_int_equal(gpu_procfs_parse_information(buf, 29, &e), 0);
}

static struct gpu_report *report(size_t n, const char *const *bus)
{
        struct gpu_report *r = calloc(1, sizeof(*r));
        assert_non_null(r);
        r->gpus = calloc(n, sizeof(*r->gpus));
        assert_non_null(r->gpus);
        r->n_gpus = n;
        for (size_t i = 0; i < n; i++) {
                r->gpus[i].index = (unsigned)i;
                snprintf(r->gpus[i].pci_bus_id, sizeof(r->gpus[i].pci_bus_id), "%s", bus[i]);
                if (bus[i][0])
                        snprintf(r->gpus[i].uuid, sizeof(r->gpus[i].uuid), "GPU-nvml%zu", i);
                else
                        snprintf(r->gpus[i].status_message, sizeof(r->gpus[i].status_message), "GPU %zu: GPU is lost "
                                 "(NVML_ERROR_GPU_IS_LOST): fallen off the bus or otherwise inaccessible", i);
                r->gpus[i].status = bus[i][0] ? GPU_OK : GPU_LOST;
        }
        return r;
}

static void test_fill(void **state)
{
        (void)state;
        const struct gpu_procfs_entry e[] = {
                { "0000:1b:00.0", "GPU-aaaa", 0, true },
                { "0000:43:00.0", "GPU-bbbb", 1, true },
                { "0000:52:00.0", "GPU-cccc", 2, true },
                { "0000:61:00.0", "", 3, true },
        };
        /* one lost GPU among four: the one entry no named GPU has */
        const char *const one[] = { "0000:1b:00.0", "", "0000:52:00.0", "0000:61:00.0" };
        struct gpu_report *r = report(4, one);
        assert_int_equal(gpu_procfs_fill(r, e, 4), 1);
        assert_string_equal(r->gpus[1].pci_bus_id, "0000:43:00.0");
        assert_string_equal(r->gpus[1].uuid, "GPU-bbbb");
        assert_true(r->gpus[1].minor_known);
        assert_int_equal(r->gpus[1].minor, 1);
        /* NVML's whole sentence, then the note whole (it was cut at 160 bytes: "... the only entr") */
        assert_string_equal(r->gpus[1].status_message,
                            "GPU 1: GPU is lost (NVML_ERROR_GPU_IS_LOST): fallen off the bus or otherwise inaccessible; "
                            "bus id from /proc/driver/nvidia/gpus (the only GPU and the only entry left)");
        assert_string_equal(r->gpus[0].uuid, "GPU-nvml0"); /* named GPUs untouched */
        assert_int_equal(r->gpus[1].status, GPU_LOST);
        gpu_report_free(r);

        /* two lost, nothing to tell them apart: nothing is guessed (NVML's index order and the
         * bus order need not agree) */
        const char *const two[] = { "", "0000:43:00.0", "0000:52:00.0", "" };
        r = report(4, two);
        assert_int_equal(gpu_procfs_fill(r, e, 4), 0);
        assert_string_equal(r->gpus[0].pci_bus_id, "");
        assert_string_equal(r->gpus[3].pci_bus_id, "");
        /* ...but one's device minor (its /dev/nvidia node) names its entry, then the other is the
         * only one left */
        r->gpus[3].minor = 0;
        r->gpus[3].minor_known = true;
        assert_int_equal(gpu_procfs_fill(r, e, 4), 2);
        assert_string_equal(r->gpus[3].pci_bus_id, "0000:1b:00.0");
        assert_string_equal(r->gpus[3].uuid, "GPU-aaaa");
        assert_string_equal(r->gpus[0].pci_bus_id, "0000:61:00.0");
        assert_string_equal(r->gpus[0].uuid, "");
        gpu_report_free(r);

        /* a GPU NVML gave a UUID but no bus id: the entry of that UUID, whatever else is free */
        const char *const uuid_only[] = { "0000:1b:00.0", "", "" };
        r = report(3, uuid_only);
        snprintf(r->gpus[2].uuid, sizeof(r->gpus[2].uuid), "GPU-CCCC");
        assert_int_equal(gpu_procfs_fill(r, e, 4), 1);
        assert_string_equal(r->gpus[2].pci_bus_id, "0000:52:00.0");
        assert_string_equal(r->gpus[2].uuid, "GPU-CCCC"); /* NVML's spelling kept */
        assert_string_equal(r->gpus[1].pci_bus_id, ""); /* 43 and 61 left for one GPU: no guess */
        gpu_report_free(r);

        /* the only GPU and entry left, but their UUIDs disagree: not filled */
        const char *const clash[] = { "0000:1b:00.0", "", "0000:52:00.0", "0000:61:00.0" };
        r = report(4, clash);
        snprintf(r->gpus[1].uuid, sizeof(r->gpus[1].uuid), "GPU-dddd");
        assert_int_equal(gpu_procfs_fill(r, e, 4), 0);
        assert_string_equal(r->gpus[1].pci_bus_id, "");
        gpu_report_free(r);

        /* as many unclaimed entries as unnamed GPUs, or nothing is guessed */
        const char *const three[] = { "0000:1b:00.0", "", "0000:52:00.0" };
        r = report(3, three);
        assert_int_equal(gpu_procfs_fill(r, e, 4), 0); /* 43 and 61 unclaimed, one GPU unnamed */
        assert_string_equal(r->gpus[1].pci_bus_id, "");
        assert_string_equal(r->gpus[1].status_message,
                            "GPU 1: GPU is lost (NVML_ERROR_GPU_IS_LOST): fallen off the bus or otherwise inaccessible");
        assert_int_equal(gpu_procfs_fill(r, e, 0), 0);
        gpu_report_free(r);

        /* nothing unnamed: nothing to do */
        const char *const none[] = { "0000:1b:00.0", "0000:43:00.0" };
        r = report(2, none);
        assert_int_equal(gpu_procfs_fill(r, e, 2), 0);
        gpu_report_free(r);
}

/* The reader on a tree like the module's: sorted by bus id; a directory whose name is not a bus
 * id, a file whose bus location disagrees with its directory, and a missing file are skipped. */
static void test_read(void **state)
{
        (void)state;
        char dir[] = "/tmp/gv-procfs.XXXXXX";
        assert_non_null(mkdtemp(dir));
        static const struct { const char *name, *text; } f[] = {
                { "0000:61:00.0", "Bus Location: \t 0000:61:00.0\nGPU UUID: \t GPU-61\n" },
                { "0000:1b:00.0", "Bus Location: \t 0000:1b:00.0\nGPU UUID: \t GPU-1b\n" },
                { "0000:43:00.0", "Bus Location: \t 0000:44:00.0\n" },
                { "not-a-bus", "Bus Location: \t 0000:52:00.0\n" },
        };
        char p[512];
        snprintf(p, sizeof(p), "%s/gpus", dir);
        assert_int_equal(mkdir(p, 0755), 0);
        for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
                snprintf(p, sizeof(p), "%s/gpus/%s", dir, f[i].name);
                assert_int_equal(mkdir(p, 0755), 0);
                snprintf(p, sizeof(p), "%s/gpus/%s/information", dir, f[i].name);
                FILE *fp = fopen(p, "w");
                assert_non_null(fp);
                fputs(f[i].text, fp);
                fclose(fp);
        }
        snprintf(p, sizeof(p), "%s/gpus/0000:9d:00.0", dir);
        assert_int_equal(mkdir(p, 0755), 0);    /* no information file */
        struct gpu_procfs_entry e[GPU_PROCFS_MAX];
        assert_int_equal(gpu_procfs_read(dir, e, GPU_PROCFS_MAX), 2);
        assert_string_equal(e[0].pci_bus_id, "0000:1b:00.0");
        assert_string_equal(e[0].uuid, "GPU-1b");
        assert_string_equal(e[1].pci_bus_id, "0000:61:00.0");
        assert_int_equal(gpu_procfs_read(dir, e, 1), 1);
        char cmd[600];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
        assert_int_equal(system(cmd), 0);
        assert_int_equal(gpu_procfs_read(dir, e, GPU_PROCFS_MAX), -ENOENT);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse),
                cmocka_unit_test(test_fill),
                cmocka_unit_test(test_read),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
