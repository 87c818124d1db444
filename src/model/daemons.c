#include "model/daemons.h"

#include <string.h>

#define COMM_LEN 15 /* TASK_COMM_LEN - 1 */

#define PERSISTENCED "stop the persistence daemon: `systemctl stop nvidia-persistenced` (and `nvidia-smi -pm 0`)"
#define MPS "stop MPS when its clients are gone: `echo quit | nvidia-cuda-mps-control`"
#define DISPLAY "stop the display server: `systemctl stop display-manager`"
#define DCGM "stop DCGM: `systemctl stop nvidia-dcgm` (and the exporter)"
#define FABRIC "stop the fabric manager: `systemctl stop nvidia-fabricmanager` (NVSwitch systems: reset every GPU together)"
#define K8S "drain the node (`kubectl drain NODE`) so the device plugin and the pods stop using the GPU"

const struct gpu_daemon gpu_daemons[] = {
        { "nvidia-persistenced", "persistence daemon", PERSISTENCED, false },
        { "nvidia-cuda-mps-control", "MPS", MPS, false },
        { "nvidia-cuda-mps-server", "MPS", MPS, true },       /* holds its clients' memory */
        { "Xorg", "display server", DISPLAY, true },
        { "X", "display server", DISPLAY, true },
        { "Xwayland", "display server", DISPLAY, true },
        { "gnome-shell", "display server", DISPLAY, true },
        { "kwin_wayland", "display server", DISPLAY, true },
        { "kwin_x11", "display server", DISPLAY, true },
        { "mutter", "display server", DISPLAY, true },
        { "sway", "display server", DISPLAY, true },
        { "weston", "display server", DISPLAY, true },
        { "nv-hostengine", "DCGM host engine", DCGM, false },
        { "dcgm-exporter", "DCGM exporter", DCGM, false },
        { "nv-fabricmanager", "fabric manager", FABRIC, false },
        { "nvidia-fabricmanager", "fabric manager", FABRIC, false },
        { "nvidia-device-plugin", "device plugin", K8S, false },
        { "k8s-device-plugin", "device plugin", K8S, false },
        { "nvidia-gpu-device-plugin", "device plugin", K8S, false },
        { "gpu-feature-discovery", "device plugin", K8S, false },
        { "nvidia-mig-manager", "MIG manager", K8S, false },
        /* another ghostvram (serve, watch) */
        { "ghostvram", "ghostvram", "stop the running ghostvram (`systemctl stop ghostvram` if it is `ghostvram serve`)", false },
        { NULL, NULL, NULL, false },
};

bool proc_name_matches(const char *comm, const char *cmdline, const char *name)
{
        if (!name || !*name)
                return false;
        if (comm) {
                size_t nl = strlen(name);
                size_t cl = strlen(comm);
                /* the kernel keeps the first 15 characters of the executable name */
                if (nl > COMM_LEN ? cl == COMM_LEN && strncmp(comm, name, COMM_LEN) == 0 : strcmp(comm, name) == 0)
                        return true;
        }
        if (cmdline && *cmdline) {
                /* argv[0] as joined by the reader (arguments separated by spaces) */
                size_t a0 = strcspn(cmdline, " ");
                const char *base = cmdline;
                for (size_t i = 0; i < a0; i++)
                        if (cmdline[i] == '/')
                                base = cmdline + i + 1;
                size_t bl = (size_t)(cmdline + a0 - base);
                if (bl == strlen(name) && strncmp(base, name, bl) == 0)
                        return true;
        }
        return false;
}

const struct gpu_daemon *gpu_daemon_of(const struct host_proc *p)
{
        /* argv[0] first: a 15-character comm is ambiguous (nvidia-cuda-mps-control and
         * nvidia-cuda-mps-server share "nvidia-cuda-mps") */
        for (size_t i = 0; gpu_daemons[i].name; i++)
                if (proc_name_matches(NULL, p->cmdline, gpu_daemons[i].name))
                        return &gpu_daemons[i];
        for (size_t i = 0; gpu_daemons[i].name; i++)
                if (proc_name_matches(p->comm, NULL, gpu_daemons[i].name))
                        return &gpu_daemons[i];
        return NULL;
}
