/* simstate: the simulated host's directory — variants, GPU descriptions, device files,
 * library lookup, and the small file helpers the other sim/state files share. */
#include "simstate.h"
#include "simstate_int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "util/buf.h"
#include "util/fileio.h"
#include "util/parse.h"

/* Driver generations, newest first. Symbol sets per variant are compiled in
 * (sim/CMakeLists.txt); docs/simulator.md says where each fact comes from. */
const struct sim_variant sim_variants[] = {
        { "current", "560.35.03", "12.560.35.03", true, 24,
          "R560: _v3 (24 B), DetailList, MemoryInfo_v2, MIG; PIDs translated" },
        { "535.54.03", "535.54.03", "12.535.54.03", false, 32,
          "early R535: _v3 with 32-byte records, no DetailList; host PIDs" },
        { "535.98", "535.98", "12.535.98", false, 0,
          "R535.98: no _v3 (_v2, 24-byte records); host PIDs" },
        { "470.42.01", "470.42.01", "11.470.42.01", false, 0,
          "R470: _v2 and MPS calls, no MemoryInfo_v2; host PIDs" },
        { "440.33.01", "440.33.01", "10.440.33.01", false, 0,
          "R440: legacy v1 symbol set, no MIG, 24-byte events; host PIDs" },
};
const size_t sim_n_variants = sizeof(sim_variants) / sizeof(sim_variants[0]);

const struct sim_variant *sim_variant_find(const char *name)
{
        for (size_t i = 0; i < sim_n_variants; i++)
                if (strcmp(name, sim_variants[i].name) == 0 ||
                    strcmp(name, sim_variants[i].driver_version) == 0)
                        return &sim_variants[i];
        return NULL;
}

/* ---- small helpers ------------------------------------------------------------------- */

int sim_path(char *out, size_t outlen, const char *dir, const char *name)
{
        int n = snprintf(out, outlen, "%s/%s", dir, name);
        return n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG : 0;
}

int sim_read(const char *dir, const char *name, char **ret, size_t *ret_len)
{
        char p[PATH_MAX];
        int r = sim_path(p, sizeof(p), dir, name);
        if (r < 0)
                return r;
        return read_file_at(AT_FDCWD, p, SIM_FILE_MAX, ret, ret_len);
}

int sim_write(const char *dir, const char *name, const char *data, size_t len)
{
        char p[PATH_MAX];
        int r = sim_path(p, sizeof(p), dir, name);
        if (r < 0)
                return r;
        r = write_file_atomic(p, data, len);
        if (r < 0)
                return r;
        (void)chmod(p, 0644);
        return 0;
}

int sim_open(const char *dir, const char *name, int flags)
{
        char p[PATH_MAX];
        int r = sim_path(p, sizeof(p), dir, name);
        if (r < 0)
                return r;
        int fd = open(p, flags | O_CLOEXEC | O_NOCTTY);
        return fd < 0 ? -errno : fd;
}

int sim_lock(const char *dir)
{
        int r, fd = sim_open(dir, "lock", O_RDWR);
        if (fd < 0)
                return fd;
        while (flock(fd, LOCK_EX) < 0) {
                if (errno != EINTR) {
                        r = -errno;
                        close(fd);
                        return r;
                }
        }
        return fd;
}

void sim_unlock(int fd)
{
        if (fd >= 0)
                close(fd); /* drops the flock */
}

char *sim_next_line(char **cursor)
{
        char *s = *cursor;
        if (!s || !*s)
                return NULL;
        char *nl = strchr(s, '\n');
        if (nl) {
                *nl = '\0';
                *cursor = nl + 1;
        } else {
                *cursor = s + strlen(s);
        }
        size_t len = strlen(s);
        if (len && s[len - 1] == '\r')
                s[len - 1] = '\0';
        return s;
}

int sim_kv(const char *line, const char *key, bool rest, char *out, size_t outlen)
{
        size_t klen = strlen(key);
        for (const char *p = line; (p = strstr(p, key)); p++) {
                if ((p != line && p[-1] != ' ' && p[-1] != '\t') || p[klen] != '=')
                        continue;
                const char *v = p + klen + 1;
                size_t n = rest ? strlen(v) : strcspn(v, " \t");
                if (n >= outlen)
                        return -E2BIG;
                memcpy(out, v, n);
                out[n] = '\0';
                return 0;
        }
        return -ENOENT;
}

int sim_kv_u64(const char *line, const char *key, uint64_t *ret)
{
        char v[32];
        int r = sim_kv(line, key, false, v, sizeof(v));
        if (r < 0)
                return r;
        if (strncmp(v, "0x", 2) == 0) {
                const char *end;
                r = parse_u64_prefix(v, 16, ret, &end);
                return r < 0 ? r : *end ? -EINVAL : 0;
        }
        return parse_u64(v, ret);
}

uint64_t sim_now_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

unsigned long long sim_pidns_of(const char *who)
{
        char p[64];
        struct stat st;
        snprintf(p, sizeof(p), "/proc/%s/ns/pid", who);
        if (stat(p, &st) < 0)
                return 0;
        return (unsigned long long)st.st_ino;
}

/* ---- library lookup -------------------------------------------------------------------- */

static int sim_try_file(const char *base, const char *rel, char *out, size_t outlen)
{
        int n = snprintf(out, outlen, "%s/%s", base, rel);
        if (n < 0 || (size_t)n >= outlen)
                return -ENAMETOOLONG;
        return access(out, R_OK) == 0 ? 0 : -ENOENT;
}

int simstate_find_file(const char *rel, char *out, size_t outlen)
{
        char exe[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
        if (n > 0) {
                exe[n] = '\0';
                char *slash = strrchr(exe, '/');
                if (slash) {
                        char sub[PATH_MAX];
                        *slash = '\0';
                        int k = snprintf(sub, sizeof(sub), "%s/sim", exe);
                        if (k > 0 && (size_t)k < sizeof(sub) && sim_try_file(sub, rel, out, outlen) == 0)
                                return 0;
                        if (sim_try_file(exe, rel, out, outlen) == 0)
                                return 0;
                        /* an install (make install, the Debian package, a DESTDIR copy):
                         * PREFIX/bin/ghostvram and PREFIX/lib/ghostvram/sim, wherever PREFIX is */
                        k = snprintf(sub, sizeof(sub), "%s/../lib/ghostvram/sim", exe);
                        if (k > 0 && (size_t)k < sizeof(sub) && sim_try_file(sub, rel, out, outlen) == 0)
                                return 0;
                }
        }
        if (sim_try_file(GV_SIM_LIBDIR_BUILD, rel, out, outlen) == 0)
                return 0;
        if (sim_try_file(GV_SIM_LIBDIR_INSTALL, rel, out, outlen) == 0)
                return 0;
        return -ENOENT;
}

int simstate_library(const char *dir, char *out, size_t outlen)
{
        struct sim_knobs *k = NULL;
        char rel[64];
        struct stat st;
        char conf[PATH_MAX];
        int r = sim_path(conf, sizeof(conf), dir, "sim.conf");
        if (r < 0)
                return r;
        if (stat(conf, &st) < 0)
                return -ENOENT;
        k = malloc(sizeof(*k));
        if (!k)
                return -ENOMEM;
        r = sim_knobs_load(dir, k);
        if (r < 0)
                goto out;
        r = snprintf(rel, sizeof(rel), "%s/libnvidia-ml.so.1", k->driver);
        if (r < 0 || (size_t)r >= sizeof(rel)) {
                r = -ENAMETOOLONG;
                goto out;
        }
        r = simstate_find_file(rel, out, outlen);
out:
        free(k);
        return r;
}

int simstate_dev_prefix(const char *dir, char *out, size_t outlen)
{
        int n = snprintf(out, outlen, "%s/dev/nvidia", dir);
        return n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG : 0;
}

/* ---- the host: sim.conf and gpus --------------------------------------------------------- */

/* PCI buses of the GPUs of an 8-GPU HGX board, then made-up ones. */
static const unsigned sim_pci_buses[] = { 0x1B, 0x43, 0x52, 0x61, 0x9D, 0xC3, 0xD1, 0xDF };

static int sim_make_uuid(char *out, size_t outlen)
{
        unsigned char b[16];
        if (getrandom(b, sizeof(b), GRND_NONBLOCK) != (ssize_t)sizeof(b)) {
                uint64_t seed = sim_now_ms() ^ ((uint64_t)getpid() << 32);
                for (size_t i = 0; i < sizeof(b); i++) {
                        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
                        b[i] = (unsigned char)(seed >> 56);
                }
        }
        int n = snprintf(out, outlen,
                         "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
                         b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11],
                         b[12], b[13], b[14], b[15]);
        return n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG : 0;
}

static int sim_make_dev(const char *dir, const char *name)
{
        char p[PATH_MAX];
        int r = snprintf(p, sizeof(p), "%s/dev/%s", dir, name);
        if (r < 0 || (size_t)r >= sizeof(p))
                return -ENAMETOOLONG;
        int fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC | O_NOCTTY, 0666);
        if (fd < 0)
                return -errno;
        r = 0;
        /* real device nodes are crw-rw-rw-: anyone may open them */
        if (fchmod(fd, 0666) < 0 || ftruncate(fd, SIM_DEV_FILE_SIZE) < 0)
                r = -errno;
        close(fd);
        return r;
}

static int sim_make_empty(const char *dir, const char *name, mode_t mode)
{
        char p[PATH_MAX];
        int r = sim_path(p, sizeof(p), dir, name);
        if (r < 0)
                return r;
        int fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC | O_NOCTTY, mode);
        if (fd < 0)
                return -errno;
        r = fchmod(fd, mode) < 0 ? -errno : 0;
        close(fd);
        return r;
}

/* The nvidia module's own file of a GPU it probed, /proc/driver/nvidia/gpus/<bus id>/information,
 * as kernel-open/nvidia/nv-procfs.c (nv_procfs_read_gpu_info) prints it: one "Key: \t value"
 * line a field, the directory named dddd:bb:dd.f in lower case. The module writes it from what it
 * read at probe time, so it stays when NVML loses the GPU's handle (gpu_lost_handle). IRQ, VBIOS
 * and the DMA figures are those of an H100 SXM host (assumed values: nothing reads them). */
static int sim_make_gpu_info(const char *dir, unsigned minor, unsigned bus, const char *uuid)
{
        char rel[128], p[PATH_MAX], text[640];
        snprintf(rel, sizeof(rel), "proc/driver/nvidia/gpus/0000:%02x:00.0", bus);
        int r = sim_path(p, sizeof(p), dir, rel);
        if (r == 0)
                r = mkdir_p(p);
        if (r < 0)
                return r;
        int n = snprintf(text, sizeof(text),
                         "Model: \t\t NVIDIA H100 80GB HBM3\n"
                         "IRQ:   \t\t %u\n"
                         "GPU UUID: \t %s\n"
                         "Video BIOS: \t 96.00.99.00.01\n"
                         "Bus Type: \t PCIe\n"
                         "DMA Size: \t 52 bits\n"
                         "DMA Mask: \t 0xfffffffffffff\n"
                         "Bus Location: \t 0000:%02x:00.0\n"
                         "Device Minor: \t %u\n"
                         "GPU Excluded:\t No\n",
                         256 + minor, uuid, bus, minor);
        if (n < 0 || (size_t)n >= sizeof(text))
                return -ENAMETOOLONG;
        strncat(rel, "/information", sizeof(rel) - strlen(rel) - 1);
        return sim_write(dir, rel, text, (size_t)n);
}

int sim_init_dir(const char *dir, unsigned n_gpus, uint64_t memory_mib, uint64_t reserved_mib)
{
        struct buf b = BUF_INIT(SIM_FILE_MAX);
        char p[PATH_MAX];
        struct stat st;
        int r;

        /* "" would put the host at the root: DIR/dev is then the host's /dev */
        if (!dir || !*dir || n_gpus < 1 || n_gpus > SIM_MAX_GPUS || memory_mib == 0 || reserved_mib >= memory_mib ||
            memory_mib > ((uint64_t)1 << 24))
                return -EINVAL;
        r = sim_path(p, sizeof(p), dir, "sim.conf");
        if (r < 0)
                return r;
        if (stat(p, &st) == 0)
                return -EEXIST;
        r = sim_path(p, sizeof(p), dir, "dev");
        if (r < 0)
                return r;
        r = mkdir_p(p);
        if (r < 0)
                return r;
        /* the owners file and the lock exist before anything can refer to them */
        r = sim_make_empty(dir, "owners", 0666);
        if (r < 0)
                goto out;
        r = sim_make_empty(dir, "lock", 0666);
        if (r < 0)
                goto out;
        r = sim_make_dev(dir, "nvidiactl");
        if (r < 0)
                goto out;
        r = sim_make_dev(dir, "nvidia-uvm");
        if (r < 0)
                goto out;
        /* MIG's capability nodes that exist without instances: mig/config and mig/monitor,
         * root's alone (0400) as the driver's default DeviceFileMode for them is taken here to be:
         * a non-root caller sees no aggregate process list on a MIG GPU (docs/simulator.md, MIG) */
        r = sim_path(p, sizeof(p), dir, "dev/nvidia-caps");
        if (r == 0)
                r = mkdir_p(p);
        if (r == 0)
                r = sim_make_empty(dir, "dev/nvidia-caps/nvidia-cap1", 0400);
        if (r == 0)
                r = sim_make_empty(dir, "dev/nvidia-caps/nvidia-cap2", 0400);
        if (r < 0)
                goto out;

        r = buf_puts(&b, "# GPUs of this simulated host, one a line (docs/simulator.md)\n");
        for (unsigned i = 0; r == 0 && i < n_gpus; i++) {
                char uuid[64], dev[32];
                unsigned bus = i < sizeof(sim_pci_buses) / sizeof(sim_pci_buses[0]) ? sim_pci_buses[i]
                                                                                   : 0xE0 + i;
                r = sim_make_uuid(uuid, sizeof(uuid));
                if (r < 0)
                        break;
                snprintf(dev, sizeof(dev), "nvidia%u", i);
                r = sim_make_dev(dir, dev);
                if (r < 0)
                        break;
                r = sim_make_gpu_info(dir, i, bus, uuid);
                if (r < 0)
                        break;
                r = buf_printf(&b,
                               "gpu=%u minor=%u total_mib=%llu reserved_mib=%llu pci=00000000:%02X:00.0 "
                               "device_id=0x233010de subsystem_id=0x16c110de uuid=%s "
                               "name=NVIDIA H100 80GB HBM3 (simulated)\n",
                               i, i, (unsigned long long)memory_mib, (unsigned long long)reserved_mib,
                               bus, uuid);
        }
        if (r < 0)
                goto out;
        r = sim_write(dir, "gpus", buf_str(&b), b.len);
        if (r < 0)
                goto out;
        static const char knobs[] = "# knobs: 'ghostvram sim set DIR KEY=VALUE' (see 'ghostvram sim set --help')\n";
        r = sim_write(dir, "knobs", knobs, sizeof(knobs) - 1);
        if (r < 0)
                goto out;
        static const char ctx[] = "next=1\n";
        r = sim_write(dir, "contexts", ctx, sizeof(ctx) - 1);
        if (r < 0)
                goto out;
        buf_reset(&b);
        r = buf_printf(&b, "# ghostvram simulated host (docs/simulator.md)\nformat=1\nhost_pidns=%llu\n",
                       sim_pidns_of("self"));
        if (r < 0)
                goto out;
        /* sim.conf last: its presence is what makes the directory a simulated host */
        r = sim_write(dir, "sim.conf", buf_str(&b), b.len);
out:
        buf_free(&b);
        return r;
}

static int sim_gpu_parse(const char *line, struct sim_gpu *g)
{
        uint64_t idx, minor, total, reserved, devid, subsys;
        char pci[32];
        unsigned dom, bus, dev;
        memset(g, 0, sizeof(*g));
        if (sim_kv_u64(line, "gpu", &idx) < 0 || idx >= SIM_MAX_GPUS ||
            sim_kv_u64(line, "minor", &minor) < 0 || minor > 255 ||
            sim_kv_u64(line, "total_mib", &total) < 0 || total == 0 || total > ((uint64_t)1 << 24) ||
            sim_kv_u64(line, "reserved_mib", &reserved) < 0 || reserved >= total ||
            sim_kv_u64(line, "device_id", &devid) < 0 || devid > UINT32_MAX ||
            sim_kv_u64(line, "subsystem_id", &subsys) < 0 || subsys > UINT32_MAX ||
            sim_kv(line, "pci", false, pci, sizeof(pci)) < 0 ||
            sim_kv(line, "uuid", false, g->uuid, sizeof(g->uuid)) < 0 ||
            sim_kv(line, "name", true, g->name, sizeof(g->name)) < 0)
                return -EBADMSG;
        /* "DDDDDDDD:BB:DD.0": checked digit by digit, no scanf */
        const char *end;
        uint64_t v;
        if (strlen(pci) != 16 || pci[8] != ':' || pci[11] != ':' || strcmp(pci + 14, ".0") != 0)
                return -EBADMSG;
        if (parse_u64_prefix(pci, 16, &v, &end) < 0 || end != pci + 8)
                return -EBADMSG;
        dom = (unsigned)v;
        if (parse_u64_prefix(pci + 9, 16, &v, &end) < 0 || end != pci + 11)
                return -EBADMSG;
        bus = (unsigned)v;
        if (parse_u64_prefix(pci + 12, 16, &v, &end) < 0 || end != pci + 14)
                return -EBADMSG;
        dev = (unsigned)v;
        g->index = (unsigned)idx;
        g->minor = (unsigned)minor;
        g->total_bytes = total << 20;
        g->reserved_bytes = reserved << 20;
        g->pci_domain = dom;
        g->pci_bus = bus;
        g->pci_device = dev;
        g->pci_device_id = (uint32_t)devid;
        g->pci_subsystem_id = (uint32_t)subsys;
        memcpy(g->pci_bus_id, pci, sizeof(pci));
        return 0;
}

int sim_host_load(const char *dir, struct sim_host *ret)
{
        char *data = NULL, *cur, *line;
        size_t len;
        uint64_t ns = 0;
        int r;

        memset(ret, 0, sizeof(*ret));
        r = sim_read(dir, "sim.conf", &data, &len);
        if (r < 0)
                return r == -ENOENT || r == -ENOTDIR ? -ENOENT : r;
        bool format_ok = false;
        for (cur = data; (line = sim_next_line(&cur));) {
                if (strcmp(line, "format=1") == 0)
                        format_ok = true;
                else if (strncmp(line, "host_pidns=", 11) == 0 && parse_u64(line + 11, &ns) < 0)
                        ns = 0;
        }
        free(data);
        data = NULL;
        if (!format_ok)
                return -EBADMSG;
        ret->host_pidns = ns;

        r = sim_read(dir, "gpus", &data, &len);
        if (r < 0)
                return r == -ENOENT ? -EBADMSG : r;
        for (cur = data; (line = sim_next_line(&cur));) {
                struct sim_gpu g;
                if (line[0] == '#' || line[0] == '\0')
                        continue;
                if (sim_gpu_parse(line, &g) < 0 || g.index != ret->n_gpus) {
                        r = -EBADMSG; /* GPUs are listed in index order, none missing */
                        goto out;
                }
                ret->gpus[ret->n_gpus++] = g;
        }
        r = ret->n_gpus ? 0 : -EBADMSG;
out:
        free(data);
        return r;
}

/* ---- MIG capability nodes ------------------------------------------------------------------ */

unsigned sim_mig_cap_minor(unsigned gpu_minor, unsigned gi, bool ci)
{
        /* mig-minors: 15 GPU instance slots a GPU, each its access minor and 8 compute instances */
        return 3 + 135 * gpu_minor + 9 * gi + (ci ? 1 : 0);
}

int sim_mig_cap_path(const char *dir, unsigned minor, char *out, size_t outlen)
{
        int n = snprintf(out, outlen, "%s/dev/nvidia-caps/nvidia-cap%u", dir, minor);
        return n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG : 0;
}

bool sim_mig_privileged(const char *dir)
{
        char p[PATH_MAX];
        if (geteuid() == 0)
                return true; /* CAP_SYS_ADMIN holds every nvidia capability */
        if (sim_mig_cap_path(dir, SIM_MIG_CAP_MONITOR, p, sizeof(p)) < 0)
                return false;
        return faccessat(AT_FDCWD, p, R_OK, AT_EACCESS) == 0;
}
