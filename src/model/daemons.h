/* daemons: processes that hold NVIDIA device nodes for a living (persistence daemon, MPS,
 * display servers, DCGM, fabric manager, Kubernetes GPU agents, ghostvram itself). scan never
 * attributes a ghost to them and reports those that can keep a client's memory as `daemon-holder`, the others as what blocks a GPU reset; reclaim never ends them. */
#pragma once
#include <stdbool.h>

#include "collect/host.h"

struct gpu_daemon {
        const char *name;       /* executable name */
        const char *kind;       /* "MPS", "persistence daemon", "display server", ... */
        const char *stop;       /* how to stop it, a command where there is one */
        bool holds_memory;      /* it can keep a dead client's GPU memory (MPS server, display
                                 * server); the others only hold nodes (monitors, agents) and
                                 * merely block a GPU reset */
};

/* The known daemons, ending with a NULL name. */
extern const struct gpu_daemon gpu_daemons[];

/* Is the process named `name`: its comm (the kernel keeps 15 characters) or the base name of
 * argv[0] (cmdline as joined by the host reader)? */
bool proc_name_matches(const char *comm, const char *cmdline, const char *name);

/* The daemon p is, or NULL. */
const struct gpu_daemon *gpu_daemon_of(const struct host_proc *p);
