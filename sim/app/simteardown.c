/* gv-simteardown: the simulated driver's teardown of one context (started by gv-simcuda when
 * it creates the context, in a session of its own, holding nothing of the job's).
 *
 * The real driver frees a context's memory from its file release handler, when the kernel
 * drops the last reference to the open file description. This program waits for exactly
 * that moment — the context's OFD lock on nvidiactl is dropped by the same __fput — without
 * holding nvidiactl (sim_ctx_release_wait: an inotify watch and /proc/locks), records
 * `released=MS` for the context, and exits. With --xid45 it first waits for the
 * owner's death (its POSIX lock on DIR/owners goes when it exits) and logs the Xid 45 the
 * driver prints then: when the owner's address space is torn down, UVM stops the channels of
 * its VA space although the file may stay open in forked workers (uvm_va_space_mm.c, "Process
 * exit (mm teardown, file open)"), and a killed client's pending work is preempted.
 * It never holds the job's description, so it cannot keep the context alive; alarm() bounds
 * its life (a context never released, or a directory removed under it).
 *
 * Reports one byte on --ready-fd once it is about to wait, then closes it. Exit status 0
 * released and recorded, 1 an error (a message on stderr), 2 bad usage. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "simstate.h"
#include "util/parse.h"

#define TEARDOWN_MAX_LIFE_S (24u * 3600u)

static void usage(FILE *f)
{
        fprintf(f, "Usage: gv-simteardown --dir DIR --ctx ID [--xid45 NAME] [--ready-fd FD]\n"
                   "The simulated driver's teardown of one context; gv-simcuda starts it.\n");
}

int main(int argc, char **argv)
{
        static const struct option opts[] = {
                { "dir", required_argument, NULL, 'd' },
                { "ctx", required_argument, NULL, 'c' },
                { "xid45", required_argument, NULL, 'x' },
                { "ready-fd", required_argument, NULL, 'r' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        const char *dir = NULL, *xid_name = NULL;
        unsigned id = 0, ready = 0;
        bool have_ready = false;
        int c, r, owners = -1;
        struct sim_release_watch rw = { .fd = -1 };
        while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
                switch (c) {
                case 'd': dir = optarg; break;
                case 'c':
                        if (parse_uint_range(optarg, 1, INT32_MAX, &id) < 0)
                                goto bad;
                        break;
                case 'x': xid_name = optarg; break;
                case 'r':
                        if (parse_uint_range(optarg, 0, 1024, &ready) < 0)
                                goto bad;
                        have_ready = true;
                        break;
                case 'h': usage(stdout); return 0;
                default: goto bad;
                }
        }
        if (!dir || !id || optind != argc)
                goto bad;

        alarm(TEARDOWN_MAX_LIFE_S); /* SIGALRM's default action ends even the blocked wait */
        struct sim_host h;
        struct sim_ctx ctx;
        r = sim_host_load(dir, &h);
        if (r == 0)
                r = sim_context_get(dir, id, &ctx);
        if (r == 0 && ctx.gpu >= h.n_gpus)
                r = -EBADMSG;
        if (r < 0) {
                fprintf(stderr, "gv-simteardown: context %u of %s: %s\n", id, dir, strerror(-r));
                return 1;
        }
        r = sim_ctx_release_watch(dir, &rw);
        if (r < 0) {
                fprintf(stderr, "gv-simteardown: %s/dev/nvidiactl: cannot watch it (inotify, /proc/locks): %s\n", dir,
                        strerror(-r));
                return 1;
        }
        if (xid_name) {
                owners = sim_owners_open(dir);
                if (owners < 0) {
                        fprintf(stderr, "gv-simteardown: %s/owners: %s\n", dir, strerror(-owners));
                        return 1;
                }
        }
        r = sim_context_mark(dir, id, getpid(), 0);
        if (r < 0) {
                fprintf(stderr, "gv-simteardown: cannot record context %u: %s\n", id, strerror(-r));
                return 1;
        }
        if (have_ready) {
                char byte = 1;
                (void)!write((int)ready, &byte, 1);
                close((int)ready);
        }
        if (owners >= 0) {
                while ((r = sim_teardown_wait(owners, id)) == -EINTR)
                        ;
                close(owners);
                /* the driver names the client by the PID it recorded at channel creation, in
                 * the init namespace's terms: the outermost PID known */
                int x = r < 0 ? r : sim_kmsg_xid(dir, &h.gpus[ctx.gpu], 45, ctx.nspid[0], xid_name, "Ch 00000010");
                if (x < 0)
                        fprintf(stderr, "gv-simteardown: cannot log Xid 45 for context %u: %s\n", id, strerror(-x));
        }
        r = sim_ctx_release_wait(&rw, id);
        uint64_t now = sim_now_ms();
        sim_ctx_release_unwatch(&rw);
        if (r < 0) {
                fprintf(stderr, "gv-simteardown: waiting for context %u: %s\n", id, strerror(-r));
                return 1;
        }
        /* -ENOENT: a reader saw the release first and the delay is over (or 0): nothing to do */
        r = sim_context_mark(dir, id, 0, now);
        if (r < 0 && r != -ENOENT)
                fprintf(stderr, "gv-simteardown: cannot record the release of context %u: %s\n", id, strerror(-r));
        return 0;
bad:
        usage(stderr);
        return 2;
}
