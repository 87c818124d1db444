#include "model/daemons.h"

#include <string.h>

#include "util/i18n.h"

#define COMM_LEN 15 /* TASK_COMM_LEN - 1 */

#define PERSISTENCED N_("stop the persistence daemon: `systemctl stop nvidia-persistenced` (and `nvidia-smi -pm 0`)")
#define MPS N_("stop MPS when its clients are gone: `echo quit | nvidia-cuda-mps-control`")
#define DISPLAY N_("stop the display server: `systemctl stop display-manager`")
#define DCGM N_("stop DCGM: `systemctl stop nvidia-dcgm` (and the exporter)")
#define FABRIC N_("stop the fabric manager: `systemctl stop nvidia-fabricmanager` (NVSwitch systems: reset every GPU together)")
#define K8S N_("drain the node (`kubectl drain NODE`) so the device plugin and the pods stop using the GPU")

const struct gpu_daemon gpu_daemons[] = {
        { "nvidia-persistenced", N_("persistence daemon"), PERSISTENCED, false },
        { "nvidia-cuda-mps-control", "MPS", MPS, false },
        { "nvidia-cuda-mps-server", "MPS", MPS, true },       /* holds its clients' memory */
        { "Xorg", N_("display server"), DISPLAY, true },
        { "X", N_("display server"), DISPLAY, true },
        { "Xwayland", N_("display server"), DISPLAY, true },
        { "gnome-shell", N_("display server"), DISPLAY, true },
        { "kwin_wayland", N_("display server"), DISPLAY, true },
        { "kwin_x11", N_("display server"), DISPLAY, true },
        { "mutter", N_("display server"), DISPLAY, true },
        { "sway", N_("display server"), DISPLAY, true },
        { "weston", N_("display server"), DISPLAY, true },
        { "nv-hostengine", N_("DCGM host engine"), DCGM, false },
        { "dcgm-exporter", N_("DCGM exporter"), DCGM, false },
        { "nv-fabricmanager", N_("fabric manager"), FABRIC, false },
        { "nvidia-fabricmanager", N_("fabric manager"), FABRIC, false },
        { "nvidia-device-plugin", N_("device plugin"), K8S, false },
        { "k8s-device-plugin", N_("device plugin"), K8S, false },
        { "nvidia-gpu-device-plugin", N_("device plugin"), K8S, false },
        { "gpu-feature-discovery", N_("device plugin"), K8S, false },
        { "nvidia-mig-manager", N_("MIG manager"), K8S, false },
        /* another ghostvram (serve, watch) */
        { "ghostvram", "ghostvram", N_("stop the running ghostvram (`systemctl stop ghostvram` if it is `ghostvram serve`)"), false },
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
