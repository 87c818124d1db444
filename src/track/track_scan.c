/* track_scan: see track_scan.h. */
#include "track/track_scan.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collect/sample.h"

int track_scan_collect(const struct scan_result *r, const char *dir, const char *proc_root, struct track_scan *ts)
{
        memset(ts, 0, sizeof(*ts));
        ts->dir = dir;
        int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0) {
                snprintf(ts->error, sizeof(ts->error), "cannot read ledger directory %s: %s", dir, strerror(errno));
                return 0;
        }
        const struct gpu_report *gr = r->facts ? r->facts->gpu : NULL;
        for (size_t g = 0; g < r->n_gpus && ts->n < TRACK_SCAN_MAX; g++) {
                const struct gpu_ledger *l = &r->gpus[g];
                uint8_t uuid[16];
                if (!gr || g >= gr->n_gpus || track_uuid_parse(gr->gpus[g].uuid, uuid) < 0)
                        continue;
                for (size_t k = 0; k < l->n_owners && ts->n < TRACK_SCAN_MAX; k++) {
                        const struct owner *ow = &l->owners[k];
                        struct track_scan_entry *e = &ts->e[ts->n];
                        if (ow->cls != OWNER_STALE || ow->pid == 0)
                                continue;
                        if (track_find_dead(dir, proc_root, (pid_t)ow->pid, e->file, sizeof(e->file)) < 0)
                                continue;
                        e->ledger = malloc(sizeof(*e->ledger));
                        if (!e->ledger) {
                                close(dfd);
                                return -ENOMEM;
                        }
                        if (track_ledger_load(dfd, e->file, e->ledger) < 0) {
                                free(e->ledger);
                                e->ledger = NULL;
                                continue;
                        }
                        e->gpu_index = l->index;
                        e->owner_pid = (pid_t)ow->pid;
                        track_ledger_summary(e->ledger, uuid, &e->summary);
                        ts->n++;
                }
        }
        close(dfd);
        return 0;
}

void track_scan_free(struct track_scan *ts)
{
        if (!ts)
                return;
        for (size_t i = 0; i < ts->n; i++) {
                track_ledger_free(ts->e[i].ledger);
                free(ts->e[i].ledger);
                ts->e[i].ledger = NULL;
        }
        ts->n = 0;
}
