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
        { "nvidia-persistenced", "persistence daemon", PERSISTENCED },
        { "nvidia-cuda-mps-control", "MPS", MPS },
        { "nvidia-cuda-mps-server", "MPS", MPS },       /* holds its clients' memory */
        { "Xorg", "display server", DISPLAY },
        { "X", "display server", DISPLAY },
        { "Xwayland", "display server", DISPLAY },
        { "gnome-shell", "display server", DISPLAY },
        { "kwin_wayland", "display server", DISPLAY },
        { "kwin_x11", "display server", DISPLAY },
        { "mutter", "display server", DISPLAY },
        { "sway", "display server", DISPLAY },
        { "weston", "display server", DISPLAY },
        { "nv-hostengine", "DCGM host engine", DCGM },
        { "dcgm-exporter", "DCGM exporter", DCGM },
        { "nv-fabricmanager", "fabric manager", FABRIC },
        { "nvidia-fabricmanager", "fabric manager", FABRIC },
        { "nvidia-device-plugin", "device plugin", K8S },
        { "k8s-device-plugin", "device plugin", K8S },
        { "nvidia-gpu-device-plugin", "device plugin", K8S },
        { "gpu-feature-discovery", "device plugin", K8S },
        { "nvidia-mig-manager", "MIG manager", K8S },
        /* another ghostvram (serve, watch) */
        { "ghostvram", "ghostvram", "stop the running ghostvram (`systemctl stop ghostvram` if it is `ghostvram serve`)" },
        { NULL, NULL, NULL },
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
        for (size_t i = 0; gpu_daemons[i].name; i++)
                if (proc_name_matches(p->comm, p->cmdline, gpu_daemons[i].name))
                        return &gpu_daemons[i];
        return NULL;
}
