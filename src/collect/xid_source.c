/* xid_source: which kernel log to read (/dev/kmsg, a saved log, stdin, the simulated host's),
 * and reading it whole into events. The I/O half of the xid module; the parsing is in xid.c. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "collect/xid.h"
#include "util/i18n.h"

int xid_source_open(const struct xid_source_opts *o, bool follow, struct kmsg_reader *rd,
                    struct xid_source_info *info, char *err, size_t errlen)
{
        struct kmsg_time_opts t = { .boot_time = -1, .now = (double)time(NULL) };
        double boot = o->boot_time;
        bool have_boot = boot > 0 || kmsg_boot_time(o->proc_root, &boot) == 0;
        bool this_boot = o->this_boot;
        char simlog[4096];
        const char *path = o->kmsg_path;
        int r;
        memset(rd, 0, sizeof(*rd));
        rd->fd = -1;
        memset(info, 0, sizeof(*info));
        if (!path && o->sim_dir) {
                int n = snprintf(simlog, sizeof(simlog), "%s/kmsg", o->sim_dir);
                if (n < 0 || (size_t)n >= sizeof(simlog)) {
                        if (err && errlen)
                                snprintf(err, errlen, _("GHOSTVRAM_SIM=%s: path too long"), o->sim_dir);
                        return -ENAMETOOLONG;
                }
                info->source = KMSG_SRC_FILE;
                info->this_host = true;
                snprintf(info->path, sizeof(info->path), "%s", simlog);
                if (access(simlog, F_OK) < 0) {
                        info->no_log = true;
                        return 0;
                }
                path = simlog;
                this_boot = true; /* the simulated host's log stands for this boot's */
        }
        if (path) {
                if (this_boot && have_boot)
                        t.boot_time = boot;
                r = kmsg_reader_open_file(rd, path, follow, &t, err, errlen);
                if (r < 0)
                        return r;
                info->this_host = this_boot;
                snprintf(info->path, sizeof(info->path), "%s", strcmp(path, "-") == 0 ? "standard input" : path);
        } else {
                if (have_boot)
                        t.boot_time = boot;
                const char *dev = o->kmsg_dev ? o->kmsg_dev : "/dev/kmsg";
                r = kmsg_reader_open_kmsg(rd, dev, follow, &t, err, errlen);
                if (r < 0)
                        return r;
                info->this_host = true;
                snprintf(info->path, sizeof(info->path), "%s", dev);
        }
        info->source = rd->source;
        info->boot_time = t.boot_time;
        return 0;
}

int xid_read_all(struct kmsg_reader *rd, const char *source, struct xid_list *out)
{
        struct xid_parser ps;
        struct kmsg_record rec;
        int r;
        xid_parser_init(&ps, source);
        while ((r = kmsg_reader_next(rd, &rec)) > 0) {
                r = xid_parser_feed(&ps, &rec, out);
                if (r < 0)
                        break;
        }
        if (r == 0)
                r = xid_parser_flush(&ps, out);
        xid_parser_free(&ps);
        return r;
}

int xid_collect(const struct xid_source_opts *o, struct xid_list *out, struct xid_source_info *info,
                char *err, size_t errlen, unsigned long *ret_overruns)
{
        struct kmsg_reader rd;
        struct xid_source_info tmp;
        if (!info)
                info = &tmp;
        int r = xid_source_open(o, false, &rd, info, err, errlen);
        if (r < 0)
                return r;
        if (!info->no_log) {
                r = xid_read_all(&rd, kmsg_source_name(info->source), out);
                if (r < 0 && err && errlen)
                        snprintf(err, errlen, _("reading %s: %s"), info->path, strerror(-r));
        }
        if (ret_overruns)
                *ret_overruns = rd.overruns;
        kmsg_reader_close(&rd);
        return r;
}
