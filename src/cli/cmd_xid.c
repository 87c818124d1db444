/* ghostvram xid: NVRM/Xid kernel events, explained and tied to GPUs and processes. */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "cli/cli.h"
#include "collect/gpu_events.h"
#include "collect/kernel.h"
#include "collect/xid.h"
#include "util/json_util.h"
#include "util/escape.h"
#include "util/i18n.h"
#include "util/parse.h"

/* xid reads the kernel log, not device nodes: no --dev-prefix, --holders or --save-bundle */
#define XID_ACCEPTS (CLI_JSON | CLI_VERBOSE | CLI_CALL_TIMEOUT | CLI_NVML_LIB | CLI_PROC | CLI_FROM_BUNDLE)

static void xid_usage(FILE *f)
{
        fputs(_("Usage: ghostvram xid [OPTIONS]\n"
              "       ghostvram xid explain CODE... [--json]\n\n"
              "List the NVIDIA driver's kernel events - Xid errors, 'GPU has fallen off the\n"
              "bus', GSP timeouts, failed initialisation, driver loads, NVSwitch SXids - with\n"
              "what each means and what to do, tied to GPU indexes and processes. Reads\n"
              "/dev/kmsg (root, or kernel.dmesg_restrict=0), or a saved log: raw dmesg,\n"
              "dmesg -T/-x, syslog, journalctl -k (short, short-iso, short-precise), raw\n"
              "/dev/kmsg records.\n\n"), f);
        fputs(_("Options:\n"
              "  --kmsg FILE          read a saved kernel log instead of /dev/kmsg ('-':\n"
              "                       stdin); a regular file of at most 256 MiB (FIFOs,\n"
              "                       /dev/zero refused)\n"
              "  --since WHEN         only events from WHEN on: a duration back from now (30m,\n"
              "                       2h, 1d), a date-time (2026-11-30, '2026-11-30 10:00',\n"
              "                       2026-11-30T10:00:00Z; local time unless a zone is\n"
              "                       given), @EPOCH, or 'now' (with --follow: only new\n"
              "                       events)\n"
              "  --gpu ID             only events of this GPU: an index or a UUID (need the\n"
              "                       driver), or a PCI bus id (0000:3b:00.0; works without\n"
              "                       one)\n"
              "  --follow, -f         keep reading and print new events as they come (Ctrl-C\n"
              "                       stops)\n"
              "  --this-boot          FILE comes from this host's current boot: turn its\n"
              "                       [seconds] stamps into wall-clock time as dmesg -T does,\n"
              "                       and name GPU indexes (always done for /dev/kmsg)\n"
              "  -v, --verbose        also show the other NVIDIA lines (serial numbers, GSP\n"
              "                       report bodies, nvidia-modeset, ...)\n"
              "  --json               machine-readable output (schema_version inside); with\n"
              "                       --follow one JSON object per line\n"
              "  --call-timeout DURATION\n"
              "                       deadline for each driver call when naming GPU indexes\n"
              "                       (default 5s)\n"), f);
        cli_common_help(f, XID_ACCEPTS & ~(CLI_JSON | CLI_VERBOSE | CLI_CALL_TIMEOUT | CLI_PROC | CLI_FROM_BUNDLE));
        fputs(_("  --proc DIR           read the boot time from DIR/stat instead of /proc/stat\n"
              "  --from-bundle DIR    name GPU indexes from a recorded bundle\n"), f);
        fputs(_("  -h, --help           this help\n"), f);
        fputs(_("\nExamples:\n"
              "  sudo ghostvram xid                       # everything in the kernel buffer\n"
              "  sudo ghostvram xid --since 2h --gpu 0\n"
              "  sudo ghostvram xid --follow --since now  # watch for new events\n"
              "  journalctl -k -o short-iso > k.log; ghostvram xid --kmsg k.log\n"
              "  dmesg | ghostvram xid --kmsg - --json |\n"
              "    jq '.events[] | select(.xid == 79)'\n"
              "  ghostvram xid explain 79                 # what Xid 79 means, what to do\n\n"), f);
        fputs(_("Environment: GHOSTVRAM_SIM=DIR reads the simulated host's kernel log DIR/kmsg\n"
              "(raw kmsg records or dmesg lines; none there: no events) instead of /dev/kmsg.\n"
              "NO_COLOR disables colour.\n\n"), f);
        fputs(_("Exit status: 0 events listed (or none found); 2 usage error or unreadable\n"
              "FILE; 3 /dev/kmsg cannot be read (not root, dmesg_restrict) or --gpu N without\n"
              "a driver.\n"), f);
}

static void explain_usage(FILE *f)
{
        fputs(_("Usage: ghostvram xid explain CODE... [--json]\n\n"
              "What an Xid code means, its likely cause, what to do, and whether a GPU reset\n"
              "or a reboot is needed, from NVIDIA's Xid catalog and ghostvram's notes.\n\n"), f);
        fputs(_("Examples:\n"
              "  ghostvram xid explain 79\n"
              "  ghostvram xid explain 45 48 --json\n"), f);
}

/* ---- output helpers ------------------------------------------------------------------------ */

static const char *sev_color(enum xid_severity s)
{
        switch (s) {
        case XID_SEV_CRITICAL: return "\033[1;31m";
        case XID_SEV_ERROR: return "\033[31m";
        case XID_SEV_WARNING: return "\033[33m";
        case XID_SEV_INFO: return "\033[2m";
        default: return "\033[35m";
        }
}

/* Hostile text (kernel messages carry process names) made safe for a terminal. */
static void put_escaped(FILE *f, const char *s)
{
        struct buf b = BUF_INIT(0);
        if (s && esc_terminal(&b, s, strlen(s)) == 0)
                fputs(buf_str(&b), f);
        buf_free(&b);
}

/* The length of the wide (CJK, full-width) character at p, two columns on a terminal; 0 when p
 * starts anything else. */
static size_t wide_char(const char *p)
{
        const unsigned char *u = (const unsigned char *)p;
        if ((u[0] & 0xF0) != 0xE0 || (u[1] & 0xC0) != 0x80 || (u[2] & 0xC0) != 0x80)
                return 0;
        unsigned cp = (u[0] & 0x0Fu) << 12 | (u[1] & 0x3Fu) << 6 | (u[2] & 0x3Fu);
        bool wide = (cp >= 0x2E80 && cp <= 0x9FFF) || (cp >= 0xAC00 && cp <= 0xD7A3) ||
                    (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0xFE30 && cp <= 0xFE4F) ||
                    (cp >= 0xFF00 && cp <= 0xFF60) || (cp >= 0xFFE0 && cp <= 0xFFE6);
        return wide ? 3 : 0;
}

/* Whether p starts a full-width mark that closes a phrase (，。；：、）！？」』): Chinese text
 * never starts a line with one, so it stays on the line of the character before it. */
static bool closing_mark(const char *p)
{
        static const char *const marks[] = { "，", "。", "；", "：", "、", "）", "！", "？", "」", "』" };
        for (size_t i = 0; i < sizeof(marks) / sizeof(marks[0]); i++)
                if (strncmp(p, marks[i], strlen(marks[i])) == 0)
                        return true;
        return false;
}

/* The columns of s as put_wrapped counts them: a wide character two, any other byte one (as
 * English text was always counted, so its lines break where they did). */
static int text_cols(const char *s, size_t n)
{
        int cols = 0;
        for (size_t i = 0; i < n;) {
                size_t w = wide_char(s + i);
                cols += w ? 2 : 1;
                i += w ? w : 1;
        }
        return cols;
}

/* The next piece that may not be split: one wide character (Chinese has no spaces between
 * words: a line may break between any two of its characters), or a run of anything else up
 * to a space or a wide character (a word, a command). */
static size_t wrap_piece(const char *p)
{
        size_t n = wide_char(p);
        if (n)
                return n;
        while (p[n] && p[n] != ' ' && !wide_char(p + n))
                n++;
        return n;
}

/* Print text wrapped at width columns, every line after the first indented by indent. */
static void put_wrapped(FILE *f, const char *label, const char *text, int indent, int width)
{
        int col = text_cols(label, strlen(label));
        fputs(label, f);
        for (; col < indent; col++)
                fputc(' ', f);
        const char *p = text ? text : "";
        bool space = true;      /* a space separates this piece from the one before (or the label) */
        while (*p) {
                while (*p == ' ') {
                        p++;
                        space = true;
                }
                size_t n = wrap_piece(p);
                if (n == 0)
                        break;
                int w = text_cols(p, n), gap = space ? 1 : 0;
                if (col > indent && col + gap + w > width && (space || !closing_mark(p))) {
                        fprintf(f, "\n%*s", indent, "");
                        col = indent;
                } else if (col > indent && gap) {
                        fputc(' ', f);
                        col++;
                }
                fwrite(p, 1, n, f);
                col += w;
                p += n;
                space = false;
        }
        fputc('\n', f);
}

static void format_time(const struct xid_event *e, char *out, size_t len)
{
        if (e->time_known) {
                time_t t = (time_t)e->time;
                struct tm tm;
                if (localtime_r(&t, &tm) && strftime(out, len, "%Y-%m-%d %H:%M:%S", &tm))
                        return;
        }
        if (e->monotonic_known)
                snprintf(out, len, "[%12.6f]", e->monotonic);
        else
                snprintf(out, len, "(no time)");
}

struct xid_view {
        bool color;
        bool json;
        const char *source;
};

static void print_event_text(FILE *f, const struct xid_view *v, const struct xid_event *e, bool before_load)
{
        struct xid_assessment a;
        xid_event_assess(e, &a);
        char ts[64];
        format_time(e, ts, sizeof(ts));
        char where[96];
        int w = 0;
        where[0] = '\0';
        if (e->gpu_index >= 0)
                w += snprintf(where + w, sizeof(where) - (size_t)w, "GPU %d ", e->gpu_index);
        if (e->pci_bus_id[0])
                w += snprintf(where + w, sizeof(where) - (size_t)w, "%s%s ",
                              e->kind == XID_KIND_SXID ? "NVSwitch " : "", e->pci_bus_id);
        if (e->gpu_instance >= 0)
                w += snprintf(where + w, sizeof(where) - (size_t)w, "MIG GI %d ", e->gpu_instance);
        if (e->compute_instance >= 0)
                w += snprintf(where + w, sizeof(where) - (size_t)w, "CI %d ", e->compute_instance);
        fprintf(f, "%s  %s%s", ts, where, where[0] ? " " : "");
        if (e->kind == XID_KIND_XID)
                fprintf(f, "Xid %d  ", e->xid);
        else if (e->kind == XID_KIND_FALLEN_OFF_BUS)
                fprintf(f, "Xid 79  ");
        else if (e->kind == XID_KIND_SXID)
                fprintf(f, "SXid %d  ", e->sxid);
        if (v->color)
                fprintf(f, "\033[1m%s\033[0m  %s%s\033[0m", _(a.title), sev_color(a.severity),
                        xid_severity_name(a.severity));
        else
                fprintf(f, "%s  %s", _(a.title), xid_severity_name(a.severity));
        if (before_load)
                fputs(_("  (before the last driver load)"), f);
        fputc('\n', f);
        if (e->message && *e->message) {
                fputs("    ", f);
                put_escaped(f, e->message);
                fputc('\n', f);
        }
        if (e->pid_known || e->process_name[0]) {
                fputs(_("    process: "), f);
                if (e->pid_known)
                        fprintf(f, "pid %u", e->pid);
                if (e->process_name[0]) {
                        fputs(e->pid_known ? " (" : "", f);
                        put_escaped(f, e->process_name);
                        fputs(e->pid_known ? ")" : "", f);
                }
                if (e->xid == 119)
                        fputs(_(" - made the call that timed out; not necessarily the culprit"), f);
                fputc('\n', f);
        }
        if (e->caused_by != XID_NONE)
                fprintf(f, _("    caused by Xid %d: follow that one (ghostvram xid explain %d)\n"), e->caused_by,
                        e->caused_by);
        if (e->kind == XID_KIND_DRIVER_LOAD && e->driver_version[0])
                fprintf(f, _("    driver %s\n"), e->driver_version);
        put_wrapped(f, "    ->", _(a.advice), 7, 96);
        if (a.note)
                put_wrapped(f, _("    note:"), _(a.note), 10, 96);
}

static json_t *event_json(const struct xid_event *e, int before_load)
{
        json_t *o = xid_event_to_json(e);
        if (o)
                json_object_set_new(o, "before_driver_load", before_load < 0 ? json_null() : json_boolean(before_load));
        return o;
}

/* ---- the command ----------------------------------------------------------------------------- */

struct gpu_filter {
        bool active;
        bool by_index;
        unsigned index;
        char pci[16];
        const char *uuid;       /* a UUID: looked up to an index once the driver is open */
};

static int parse_gpu_filter(const char *s, struct gpu_filter *g)
{
        memset(g, 0, sizeof(*g));
        g->active = true;
        if (parse_uint_range(s, 0, 1023, &g->index) == 0) {
                g->by_index = true;
                return 0;
        }
        size_t len = strlen(s);
        if (xid_pci_parse(s, len, g->pci) == (int)len)
                return 0;
        if ((strncasecmp(s, "GPU-", 4) == 0 || strncasecmp(s, "MIG-", 4) == 0) && cli_gpu_spec_check(s) == 0) {
                g->uuid = s;
                return 0;
        }
        return -EINVAL;
}

static bool keep_event(const struct xid_event *e, bool verbose, bool since_set, double since,
                       const struct gpu_filter *g)
{
        if (!verbose && (e->kind == XID_KIND_OTHER || e->kind == XID_KIND_GPU_UUID))
                return false;
        if (since_set && (!e->time_known || e->time < since))
                return false;
        if (g->active) {
                if (g->by_index)
                        return e->gpu_index == (int)g->index;
                return e->kind != XID_KIND_SXID && e->pci_bus_id[0] && strncmp(e->pci_bus_id, g->pci, 10) == 0;
        }
        return true;
}

static volatile sig_atomic_t xid_stop;

static void on_stop(int sig)
{
        (void)sig;
        xid_stop = 1;
}

/* A second source of events for --follow, merged with the kernel's and labelled (its label
 * becomes event.source). Live NVML critical-error events (nvmlEventSetWait) plug in here. */
struct xid_follow_source {
        const char *label;
        int (*poll_fd)(void *ctx);                      /* fd to poll, or -1: asked every round */
        int (*read)(void *ctx, struct xid_list *out);   /* append what is ready; 0 or -errno */
        void *ctx;
};
static int nvml_events_read(void *ctx, struct xid_list *out)
{
        return gpu_events_read(ctx, out);
}

/* The extra sources of this run (filled when following: live NVML events). */
static struct xid_follow_source xid_follow_nvml = { .label = "nvml", .poll_fd = NULL, .read = nvml_events_read };
static const struct xid_follow_source *xid_follow_sources[2] = { NULL, NULL };

/* Collect from the extra sources into batch (ordered by time with what is there). */
static int follow_merge_sources(struct xid_list *batch)
{
        for (size_t i = 0; xid_follow_sources[i]; i++) {
                const struct xid_follow_source *s = xid_follow_sources[i];
                struct xid_list got = { 0 };
                int r = s->read(s->ctx, &got);
                if (r == 0)
                        r = xid_list_merge(batch, &got, s->label);
                xid_list_free(&got);
                if (r < 0)
                        return r;
        }
        return 0;
}

struct xid_run {
        struct cli_common c;
        const char *kmsg_path;
        bool follow, this_boot, since_set;
        double since;
        struct gpu_filter gpu;
        struct xid_view view;
        const char *path_shown;
        struct gpu_report *report;
        bool map_gpus;
        bool no_log;            /* GHOSTVRAM_SIM without DIR/kmsg */
        struct xid_source_info info;
};

/* Map PCI bus ids to this host's GPU indexes; with --gpu N the driver must answer. */
static int map_events(struct xid_run *x, struct xid_event *ev, size_t n)
{
        if (!x->map_gpus && !x->gpu.by_index)
                return 0;
        if (!x->report) {
                struct gpu_opts go;
                cli_common_gpu_opts(&x->c, &go);
                if (gpu_collect(&go, &x->report) < 0)
                        x->report = NULL;
        }
        if (x->gpu.by_index) {
                if (!x->report || !x->report->driver_present) {
                        cli_error("xid",
                                  _("--gpu %u: GPU indexes come from the NVIDIA driver, which is not available "
                                    "here (%s); pass the GPU's PCI bus id instead, e.g. --gpu 0000:3b:00.0"),
                                  x->gpu.index, x->report && x->report->error[0] ? x->report->error : _("no report"));
                        return -ENODEV;
                }
                bool found = false;
                for (size_t i = 0; i < x->report->n_gpus; i++)
                        found = found || x->report->gpus[i].index == x->gpu.index;
                if (!found) {
                        cli_error("xid", P_("--gpu %u: this host has %zu GPU", "--gpu %u: this host has %zu GPUs",
                                            x->report->n_gpus), x->gpu.index, x->report->n_gpus);
                        return -ENOENT;
                }
        }
        if (x->report && x->report->driver_present)
                xid_map_gpus(ev, n, x->report);
        return 0;
}

static int open_source(struct xid_run *x, struct kmsg_reader *rd)
{
        char err[KMSG_ERR_MAX] = "";
        struct xid_source_opts so = {
                .kmsg_path = x->kmsg_path,
                .sim_dir = x->c.simulated ? x->c.sim_dir : NULL,
                .proc_root = x->c.proc_root,
                .this_boot = x->this_boot,
        };
        int r = xid_source_open(&so, x->follow, rd, &x->info, err, sizeof(err));
        if (r < 0) {
                if (x->kmsg_path) {
                        cli_error("xid", "--kmsg %s", err);
                        return EXIT_USAGE;
                }
                cli_error("xid", "%s", err);
                return EXIT_INCOMPLETE;
        }
        x->no_log = x->info.no_log;
        x->path_shown = x->info.path;
        x->map_gpus = x->info.this_host;
        x->view.source = kmsg_source_name(x->info.source);
        return 0;
}

/* The index of the last driver load in ev (-1: none). */
static long last_load(const struct xid_event *ev, size_t n)
{
        for (size_t i = n; i-- > 0;)
                if (ev[i].kind == XID_KIND_DRIVER_LOAD)
                        return (long)i;
        return -1;
}

/* What a dump showed and left out. */
struct dump_counts {
        size_t shown, hidden, no_time;
        unsigned long by_sev[XID_SEV_CRITICAL + 1];
};

/* The dump's JSON document (events: arr, taken). 0, or -EIO when it could not be written. */
static int dump_json(const struct xid_run *x, const struct kmsg_reader *rd, const struct xid_list *all,
                     const struct dump_counts *k, json_t *doc, json_t *arr)
{
        json_object_set_new(doc, "schema_version", json_integer(GV_SCHEMA_VERSION));
        json_object_set_new(doc, "source", json_string(x->view.source));
        json_object_set_new(doc, "path", json_string(x->path_shown));
        json_object_set_new(doc, "overruns", json_integer((json_int_t)rd->overruns));
        json_object_set_new(doc, "truncated_lines", json_integer((json_int_t)rd->truncated));
        json_object_set_new(doc, "dropped", json_integer((json_int_t)all->dropped));
        json_object_set_new(doc, "hidden", json_integer((json_int_t)k->hidden));
        json_object_set_new(doc, "untimed_events", json_integer((json_int_t)k->no_time));
        json_set_time(doc, "since", x->since, x->since_set);
        json_object_set_new(doc, "events", arr);
        return cli_print_json(doc) < 0 ? -EIO : 0;
}

/* No event shown: why there may be none, and where older ones are. */
static void dump_none(const struct xid_run *x)
{
        if (x->since_set)
                printf(_("No NVIDIA kernel events in %s since the given time.\n"), x->path_shown);
        else
                printf(_("No NVIDIA kernel events in %s.\n"), x->path_shown);
        if (x->no_log)
                printf(_("(The simulated host has no kernel log: write one to %s.)\n"), x->path_shown);
        /* a bus id the driver does not list is kept on purpose (a GPU that fell off the
         * bus, an NVSwitch), but said, in case it is a typing error */
        bool listed = false;
        for (size_t i = 0; x->gpu.pci[0] && x->report && i < x->report->n_gpus; i++) {
                char bus[32];
                listed |= pci_bus_id_normalize(x->report->gpus[i].pci_bus_id, bus, sizeof(bus)) == 0 &&
                          strcmp(bus, x->gpu.pci) == 0;
        }
        if (x->gpu.pci[0] && x->report && x->report->driver_present && !listed)
                printf(_("(No GPU the driver lists now is at %s: a GPU that fell off the bus, or an\n"
                         "NVSwitch, still has its events here; check the bus id otherwise.)\n"),
                       x->gpu.pci);
        else if (x->info.source == KMSG_SRC_KMSG)
                printf("%s", _("/dev/kmsg holds only the recent kernel log; for older events:\n"
                               "  journalctl -k -o short-iso > k.log; ghostvram xid --kmsg k.log\n"));
}

/* The lines after the events: how many of each severity, and what was left out. */
static void dump_footer(const struct xid_run *x, const struct kmsg_reader *rd, const struct xid_list *all,
                        const struct dump_counts *k)
{
        if (k->shown == 0) {
                dump_none(x);
        } else {
                printf(P_("\n%zu event:", "\n%zu events:", k->shown), k->shown);
                bool first = true;
                for (int s = XID_SEV_CRITICAL; s >= XID_SEV_UNKNOWN; s--) {
                        if (!k->by_sev[s])
                                continue;
                        printf("%s %lu %s", first ? "" : ",", k->by_sev[s], xid_severity_name((enum xid_severity)s));
                        first = false;
                }
                printf("%s", _(". Explain a code: ghostvram xid explain CODE\n"));
        }
        if (k->hidden)
                printf(P_("%zu other NVIDIA line not shown (-v shows them).\n",
                          "%zu other NVIDIA lines not shown (-v shows them).\n", k->hidden), k->hidden);
        if (k->no_time)
                printf(P_("%zu event without a wall-clock time left out by --since%s.\n",
                          "%zu events without a wall-clock time left out by --since%s.\n", k->no_time), k->no_time,
                       x->info.source == KMSG_SRC_KMSG ? "" : _(" (--this-boot dates [seconds] stamps from this boot)"));
        if (rd->overruns)
                printf(P_("%lu kernel log record was overwritten before they could be read.\n",
                          "%lu kernel log records were overwritten before they could be read.\n", rd->overruns),
                       rd->overruns);
        if (all->dropped)
                printf(_("%lu oldest events dropped (more than %d).\n"), all->dropped, XID_LIST_MAX);
}

/* Each event kept by the filters: into arr (JSON) or printed; counted into k. */
static void dump_events(struct xid_run *x, const struct xid_list *all, json_t *arr, struct dump_counts *k)
{
        long load = last_load(all->ev, all->n);
        for (size_t i = 0; i < all->n; i++) {
                const struct xid_event *e = &all->ev[i];
                bool before = load >= 0 && (long)i < load;
                if (!keep_event(e, x->c.verbose, x->since_set, x->since, &x->gpu)) {
                        if (!x->c.verbose && (e->kind == XID_KIND_OTHER || e->kind == XID_KIND_GPU_UUID))
                                k->hidden++;
                        else if (x->since_set && !e->time_known)
                                k->no_time++;
                        continue;
                }
                struct xid_assessment a;
                xid_event_assess(e, &a);
                k->by_sev[a.severity]++;
                k->shown++;
                if (x->view.json) {
                        json_array_append_new(arr, event_json(e, load < 0 ? -1 : before));
                } else {
                        if (k->shown > 1)
                                fputc('\n', stdout);
                        print_event_text(stdout, &x->view, e, before);
                }
        }
}

static int run_dump(struct xid_run *x, struct kmsg_reader *rd)
{
        struct xid_list all = { 0 };
        int status = EXIT_OK, r = 0;
        if (!x->no_log)
                r = xid_read_all(rd, x->view.source, &all);
        if (r < 0) {
                cli_error("xid", _("reading %s: %s"), x->path_shown, strerror(-r));
                status = EXIT_INCOMPLETE;
                goto out;
        }
        bool any_pci = false;
        for (size_t i = 0; i < all.n; i++)
                any_pci = any_pci || all.ev[i].pci_bus_id[0];
        if (any_pci || x->gpu.by_index) {
                r = map_events(x, all.ev, all.n);
                if (r < 0) {
                        status = r == -ENOENT ? EXIT_USAGE : EXIT_INCOMPLETE;
                        goto out;
                }
        }
        struct dump_counts k = { 0 };
        json_t *doc = NULL, *arr = NULL;
        if (x->view.json) {
                doc = json_object();
                arr = json_array();
                if (!doc || !arr) {
                        json_decref(doc);
                        json_decref(arr);
                        status = EXIT_INCOMPLETE;
                        goto out;
                }
        } else {
                cli_sim_banner(stdout, &x->c);
        }
        dump_events(x, &all, arr, &k);
        if (x->view.json) {
                if (dump_json(x, rd, &all, &k, doc, arr) < 0)
                        status = EXIT_INCOMPLETE;
                goto out;
        }
        dump_footer(x, rd, &all, &k);
out:
        xid_list_free(&all);
        return status;
}

static void follow_print(struct xid_run *x, const struct kmsg_reader *rd, struct xid_list *batch)
{
        if (batch->n && (x->map_gpus || x->gpu.by_index) && x->report && x->report->driver_present)
                xid_map_gpus(batch->ev, batch->n, x->report);
        for (size_t i = 0; i < batch->n; i++) {
                const struct xid_event *e = &batch->ev[i];
                if (!keep_event(e, x->c.verbose, x->since_set, x->since, &x->gpu))
                        continue;
                if (x->view.json) {
                        json_t *o = json_object();
                        if (o) {
                                json_object_set_new(o, "schema_version", json_integer(GV_SCHEMA_VERSION));
                                json_object_set_new(o, "source", json_string(e->source ? e->source : x->view.source));
                                json_object_set_new(o, "overruns", json_integer((json_int_t)rd->overruns));
                                json_object_set_new(o, "kernel_event", event_json(e, -1));
                                json_dumpf(o, stdout, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII);
                                fputc('\n', stdout);
                                json_decref(o);
                        }
                } else {
                        print_event_text(stdout, &x->view, e, false);
                        fputc('\n', stdout);
                }
        }
        fflush(stdout);
        xid_list_free(batch);
}

static int run_follow(struct xid_run *x, struct kmsg_reader *rd)
{
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = on_stop;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, NULL);   /* no SA_RESTART: poll returns EINTR */
        sigaction(SIGTERM, &sa, NULL);
        int mr = map_events(x, NULL, 0);
        if (mr < 0)
                return mr == -ENOENT ? EXIT_USAGE : EXIT_INCOMPLETE;
        /* this host's log: also listen to NVML's critical-error events, on their own thread */
        struct gpu_events *nv = NULL;
        char nverr[256] = "";
        if (!x->kmsg_path) {
                struct gpu_opts go;
                cli_common_gpu_opts(&x->c, &go);
                if (gpu_events_open(&go, &nv, nverr, sizeof(nverr)) == 0) {
                        xid_follow_nvml.ctx = nv;
                        xid_follow_sources[0] = &xid_follow_nvml;
                }
        }
        if (!x->view.json) {
                cli_sim_banner(stdout, &x->c);
                if (nv)
                        printf(P_("Following %s and NVML critical-error events of %u GPU (Ctrl-C stops).\n",
                                  "Following %s and NVML critical-error events of %u GPUs (Ctrl-C stops).\n",
                                  gpu_events_gpus(nv)),
                               x->path_shown, gpu_events_gpus(nv));
                else
                        printf(_("Following %s (Ctrl-C stops).\n"), x->path_shown);
                if (!nv && nverr[0]) {
                        struct buf b = BUF_INIT(0);
                        esc_terminal(&b, nverr, strlen(nverr));
                        printf("(%s)\n", buf_str(&b));
                        buf_free(&b);
                }
                printf("\n");
                fflush(stdout);
        }
        struct xid_parser ps;
        struct xid_list batch = { 0 };
        struct kmsg_record rec;
        unsigned long overruns = 0;
        int status = EXIT_OK;
        xid_parser_init(&ps, x->view.source);
        while (!xid_stop) {
                int r = x->no_log ? -EAGAIN : kmsg_reader_next(rd, &rec);
                if (r > 0) {
                        r = xid_parser_feed(&ps, &rec, &batch);
                        if (r == 0 && batch.n)
                                follow_print(x, rd, &batch);
                        if (r == 0)
                                continue;
                }
                if (r == 0 || r == -EAGAIN) {
                        int k = xid_parser_flush(&ps, &batch);
                        if (k == 0)
                                k = follow_merge_sources(&batch);
                        if (k < 0)
                                r = k;
                        follow_print(x, rd, &batch);
                }
                if (rd->overruns != overruns && !x->view.json) {
                        fprintf(stderr, _("ghostvram xid: %lu kernel log record(s) overwritten before they could be read\n"),
                                rd->overruns - overruns);
                        overruns = rd->overruns;
                }
                if (r == 0)
                        break;  /* standard input ended */
                if (r < 0 && r != -EAGAIN) {
                        cli_error("xid", _("reading %s: %s"), x->path_shown, strerror(-r));
                        status = EXIT_INCOMPLETE;
                        break;
                }
                /* wait for more: poll the kernel's fd or a pipe; a regular file is looked at again */
                struct pollfd pfd = { .fd = x->no_log || rd->regular ? -1 : kmsg_reader_fd(rd), .events = POLLIN };
                if (poll(&pfd, 1, pfd.fd < 0 ? 250 : 1000) < 0 && errno != EINTR) {
                        status = EXIT_INCOMPLETE;
                        break;
                }
        }
        xid_parser_free(&ps);
        xid_list_free(&batch);
        xid_follow_sources[0] = NULL;
        gpu_events_close(nv);
        return status;
}

static int cmd_xid_explain(int argc, char **argv)
{
        static const struct option opts[] = {
                { "json", no_argument, NULL, 'j' },
                { "help", no_argument, NULL, 'h' },
                { 0 },
        };
        bool json = false;
        int opt;
        optind = 1;
        opterr = 0;     /* a bad option is said in one line (cli_bad_option) */
        while ((opt = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
                if (opt == 'h') {
                        explain_usage(stdout);
                        return EXIT_OK;
                }
                if (opt == 'j') {
                        json = true;
                        continue;
                }
                const char *a = optind > 0 && optind <= argc ? argv[optind - 1] : "";
                if (a[0] == '-' && a[1] >= '0' && a[1] <= '9') /* "-1": a code, not an option */
                        cli_error("xid", _("explain: '%s' is not an Xid number (e.g. 79)"), a);
                else
                        cli_bad_option("xid explain", argc, argv, opt);
                return EXIT_USAGE;
        }
        if (optind >= argc) {
                cli_error("xid", _("explain: which Xid? e.g. 'ghostvram xid explain 79'"));
                return EXIT_USAGE;
        }
        unsigned codes[64];
        size_t n = 0;
        for (int i = optind; i < argc; i++) {
                const char *a = argv[i];
                if (strncasecmp(a, "xid", 3) == 0)
                        a += 3;
                if (n == sizeof(codes) / sizeof(codes[0]) || parse_uint_range(a, 0, 1000000, &codes[n]) < 0) {
                        cli_error("xid", _("explain: '%s' is not an Xid number (e.g. 79)"), argv[i]);
                        return EXIT_USAGE;
                }
                n++;
        }
        json_t *arr = json ? json_array() : NULL;
        for (size_t k = 0; k < n; k++) {
                struct xid_explanation x;
                xid_explain((int)codes[k], &x);
                if (json) {
                        json_array_append_new(arr, xid_explanation_to_json(&x));
                        continue;
                }
                if (k)
                        fputc('\n', stdout);
                printf(_("Xid %d: %s\n"), x.code, _(x.name));
                if (x.info)
                        printf("  %s\n", x.info->mnemonic);
                fputc('\n', stdout);
                struct buf causes = BUF_INIT(0);
                if (!x.cause && x.info)
                        xid_causes_text(x.info->causes, &causes);
                put_wrapped(stdout, _("What it means"), x.meaning ? _(x.meaning) : x.info ? _(x.info->description) : "-",
                            16, 96);
                put_wrapped(stdout, _("Likely cause"), x.cause ? _(x.cause) : buf_str(&causes), 16, 96);
                put_wrapped(stdout, _("What to do"), _(x.todo), 16, 96);
                put_wrapped(stdout, _("Reset/reboot"), _(xid_reset_text(x.reset)), 16, 96);
                char *sev = NULL;
                str_setf(&sev, _("%s (action: %s)"), xid_severity_name(x.severity), xid_action_name(x.action));
                put_wrapped(stdout, _("Severity"), sev, 16, 96);
                free(sev);
                if (x.note)
                        put_wrapped(stdout, "ghostvram", _(x.note), 16, 96);
                if (x.info) {
                        struct buf cat = BUF_INIT(0);
                        const char *it = xid_bucket_text(x.info->immediate);
                        const char *iv = xid_bucket_text(x.info->investigatory);
                        /* the catalogue's cells quoted as NVIDIA wrote them; the buckets in words */
                        buf_printf(&cat, _("\"%s\"; applies to %s; immediate action %s"), x.info->description,
                                   x.info->applies_to, x.info->immediate);
                        if (it)
                                buf_printf(&cat, _(" (%s)"), _(it));
                        buf_printf(&cat, _("; investigatory %s"), x.info->investigatory);
                        if (iv)
                                buf_printf(&cat, _(" (%s)"), _(iv));
                        if (strcmp(x.info->xid154, "-") != 0)
                                buf_printf(&cat, _("; also raises Xid 154 (%s)"), x.info->xid154);
                        buf_puts(&cat, ".");
                        put_wrapped(stdout, _("NVIDIA catalog"), buf_str(&cat), 16, 96);
                        buf_reset(&cat);
                        buf_reset(&causes);
                        xid_causes_text(x.info->causes, &causes);
                        const char *old = x.info->old_name;
                        if (strcmp(old, "(same)") == 0)
                                buf_puts(&cat, _("same name"));
                        else if (strcmp(old, "-") == 0)
                                buf_puts(&cat, _("not listed"));
                        else
                                buf_printf(&cat, "\"%s\"", old);
                        buf_printf(&cat, _("; possible causes: %s."), buf_str(&causes));
                        put_wrapped(stdout, _("Pre-Ampere doc"), buf_str(&cat), 16, 96);
                        buf_free(&cat);
                }
                buf_free(&causes);
        }
        if (json) {
                json_t *doc = json_object();
                if (!doc) {
                        json_decref(arr);
                        return EXIT_INCOMPLETE;
                }
                json_object_set_new(doc, "schema_version", json_integer(GV_SCHEMA_VERSION));
                json_object_set_new(doc, "explanations", arr);
                return cli_print_json(doc) < 0 ? EXIT_INCOMPLETE : EXIT_OK;
        }
        return EXIT_OK;
}

int cmd_xid(int argc, char **argv)
{
        if (argc >= 2 && strcmp(argv[1], "explain") == 0)
                return cmd_xid_explain(argc - 1, argv + 1);
        static const struct option opts[] = {
                CLI_COMMON_LONGOPTS,
                { "kmsg", required_argument, NULL, 'k' },
                { "since", required_argument, NULL, 's' },
                { "gpu", required_argument, NULL, 'g' },
                { "follow", no_argument, NULL, 'f' },
                { "this-boot", no_argument, NULL, 'B' },
                { "help", no_argument, NULL, 'h' },
                { 0 },
        };
        struct xid_run x;
        memset(&x, 0, sizeof(x));
        cli_common_init(&x.c, XID_ACCEPTS);
        const char *since_arg = NULL;
        int opt;
        optind = 1;
        while ((opt = getopt_long(argc, argv, "hvf", opts, NULL)) != -1) {
                switch (opt) {
                case 'h':
                        xid_usage(stdout);
                        return EXIT_OK;
                case 'k':
                        if (cli_path_arg("xid", "--kmsg", optarg) < 0)
                                return EXIT_USAGE;
                        x.kmsg_path = optarg;
                        continue;
                case 's':
                        since_arg = optarg;
                        continue;
                case 'g':
                        if (parse_gpu_filter(optarg, &x.gpu) < 0) {
                                cli_error("xid", _("--gpu: '%s' is not a GPU index (0, 1, ...), a UUID or a PCI bus "
                                                    "id (0000:3b:00.0)"), optarg);
                                return EXIT_USAGE;
                        }
                        continue;
                case 'f':
                        x.follow = true;
                        continue;
                case 'B':
                        x.this_boot = true;
                        continue;
                default:
                        break;
                }
                int r = cli_common_option(&x.c, opt, optarg, "xid");
                if (r < 0)
                        return EXIT_USAGE;
                if (r == 0) {
                        xid_usage(stderr);
                        return EXIT_USAGE;
                }
        }
        if (optind < argc) {
                cli_error("xid", _("unexpected argument '%s' (see --help; 'ghostvram xid explain CODE' explains a code)"),
                          argv[optind]);
                return EXIT_USAGE;
        }
        if (since_arg) {
                if (xid_parse_since(since_arg, (double)time(NULL), &x.since) < 0) {
                        cli_error("xid", _("--since: '%s' is not a duration (30m, 2h, 1d), a date-time "
                                           "(2026-11-30, '2026-11-30 10:00', 2026-11-30T10:00:00Z), @EPOCH or 'now'"),
                                  since_arg);
                        return EXIT_USAGE;
                }
                /* a time the kernel log cannot hold and JSON cannot write: not a filter */
                if (x.since < 0 || x.since > 253402300799.0) {
                        cli_error("xid", _("--since: '%s' is outside 1970-01-01 .. 9999-12-31"), since_arg);
                        return EXIT_USAGE;
                }
                x.since_set = true;
        }
        if (cli_common_finish(&x.c, "xid") < 0)
                return EXIT_USAGE;
        if (x.gpu.uuid) { /* the same lookup as every command's --gpu */
                int idx, gr = cli_gpu_resolve(&x.c, x.gpu.uuid, true, &idx, "xid");
                if (gr != EXIT_OK)
                        return gr;
                x.gpu.by_index = true;
                x.gpu.index = (unsigned)idx;
        }
        x.view.json = x.c.json;
        x.view.color = !x.c.json && cli_use_color(stdout);

        struct kmsg_reader rd;
        memset(&rd, 0, sizeof(rd));
        rd.fd = -1;
        int status = open_source(&x, &rd);
        if (status != EXIT_OK)
                goto out;
        status = x.follow ? run_follow(&x, &rd) : run_dump(&x, &rd);
out:
        kmsg_reader_close(&rd);
        gpu_report_free(x.report);
        return status;
}
