/* gpu_events: NVML critical-error (Xid) events, listened to on a thread of their own so that a
 * hung driver can never block the caller. Used by `xid --follow` beside the kernel log. */
#include "collect/gpu_events.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "collect/nvml_abi.h"

#define EV_MAX_GPUS 64
#define EV_WAIT_MS 250          /* each wait returns at least this often to see a stop request */
#define EV_QUEUE_MAX 4096

struct gpu_events {
        pthread_mutex_t m;
        pthread_cond_t ready;   /* the thread finished its set-up */
        bool setup_done, stop, finished, abandoned;
        int setup_error;
        char setup_message[200];
        unsigned n_registered;
        struct xid_list queue;  /* events not yet read */
        unsigned long dropped;

        void *lib;
        char path[256];
        nvmlInit_fn init;
        nvmlShutdown_fn shutdown;
        nvmlEventSetWait_fn wait;
        nvmlEventSetFree_fn set_free;
        nvmlEventSet_t set;
        struct {
                nvmlDevice_t dev;
                unsigned index;
                char pci[16];
        } gpus[EV_MAX_GPUS];
        unsigned n_gpus;
};

static void events_free(struct gpu_events *e)
{
        xid_list_free(&e->queue);
        pthread_cond_destroy(&e->ready);
        pthread_mutex_destroy(&e->m);
        free(e);
}

static double now_epoch(void)
{
        struct timeval tv;
        gettimeofday(&tv, NULL);
        return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

static void setup_done(struct gpu_events *e, int err, const char *msg)
{
        pthread_mutex_lock(&e->m);
        e->setup_done = true;
        e->setup_error = err;
        if (msg)
                snprintf(e->setup_message, sizeof(e->setup_message), "%s", msg);
        pthread_cond_broadcast(&e->ready);
        pthread_mutex_unlock(&e->m);
}

/* Register every GPU for Xid events. Returns 0 or a negative errno with a message. */
static int events_setup(struct gpu_events *e, char *msg, size_t msglen)
{
        nvmlEventSetCreate_fn create;
        nvmlDeviceRegisterEvents_fn reg;
        nvmlDeviceGetCount_fn count;
        nvmlDeviceGetHandleByIndex_fn handle;
        nvmlDeviceGetPciInfo_fn pci;
        *(void **)&e->init = dlsym(e->lib, "nvmlInit_v2");
        if (!e->init)
                *(void **)&e->init = dlsym(e->lib, "nvmlInit");
        *(void **)&e->shutdown = dlsym(e->lib, "nvmlShutdown");
        *(void **)&create = dlsym(e->lib, "nvmlEventSetCreate");
        *(void **)&reg = dlsym(e->lib, "nvmlDeviceRegisterEvents");
        *(void **)&e->wait = dlsym(e->lib, "nvmlEventSetWait_v2");
        if (!e->wait) /* before 450: a 24-byte record; our 32-byte buffer holds it */
                *(void **)&e->wait = dlsym(e->lib, "nvmlEventSetWait");
        *(void **)&e->set_free = dlsym(e->lib, "nvmlEventSetFree");
        *(void **)&count = dlsym(e->lib, "nvmlDeviceGetCount_v2");
        *(void **)&handle = dlsym(e->lib, "nvmlDeviceGetHandleByIndex_v2");
        if (!count || !handle) {
                *(void **)&count = dlsym(e->lib, "nvmlDeviceGetCount");
                *(void **)&handle = dlsym(e->lib, "nvmlDeviceGetHandleByIndex");
        }
        *(void **)&pci = dlsym(e->lib, "nvmlDeviceGetPciInfo_v3");
        if (!pci)
                *(void **)&pci = dlsym(e->lib, "nvmlDeviceGetPciInfo");
        if (!e->init || !e->shutdown || !create || !reg || !e->wait || !e->set_free || !count || !handle) {
                snprintf(msg, msglen, "this NVML has no event API");
                return -ENOTSUP;
        }
        if (e->init() != NVML_SUCCESS) {
                snprintf(msg, msglen, "NVML could not start");
                return -ENODEV;
        }
        unsigned n = 0;
        if (count(&n) != NVML_SUCCESS || create(&e->set) != NVML_SUCCESS) {
                snprintf(msg, msglen, "NVML could not create an event set");
                e->shutdown();
                return -EIO;
        }
        for (unsigned i = 0; i < n && e->n_gpus < EV_MAX_GPUS; i++) {
                nvmlDevice_t dev;
                if (handle(i, &dev) != NVML_SUCCESS)
                        continue;
                /* NOT_SUPPORTED leaves the set usable; another error leaves this GPU out */
                if (reg(dev, NVML_EVENT_TYPE_XID_CRITICAL_ERROR, e->set) != NVML_SUCCESS)
                        continue;
                e->gpus[e->n_gpus].dev = dev;
                e->gpus[e->n_gpus].index = i;
                nvmlPciInfo_t p;
                memset(&p, 0, sizeof(p));
                char id[40];
                if (pci && pci(dev, &p) == NVML_SUCCESS) {
                        snprintf(id, sizeof(id), "%.16s", p.busIdLegacy);
                        if (pci_bus_id_normalize(id, e->gpus[e->n_gpus].pci, sizeof(e->gpus[e->n_gpus].pci)) < 0)
                                e->gpus[e->n_gpus].pci[0] = '\0';
                }
                e->n_gpus++;
        }
        e->n_registered = e->n_gpus;
        if (!e->n_gpus) {
                snprintf(msg, msglen, "no GPU delivers critical-error events");
                e->set_free(e->set);
                e->shutdown();
                return -ENOTSUP;
        }
        return 0;
}

static void queue_event(struct gpu_events *e, const nvmlEventData_t *d)
{
        struct xid_event ev;
        memset(&ev, 0, sizeof(ev));
        ev.kind = XID_KIND_XID;
        ev.xid = d->eventData <= 100000 ? (int)d->eventData : 999; /* 999: NVML's "unknown Xid" */
        ev.caused_by = XID_NONE;
        ev.sxid = XID_NONE;
        ev.gpu_index = -1;
        ev.gpu_instance = d->gpuInstanceId == NVML_INSTANCE_ID_INVALID ? -1 : (int)d->gpuInstanceId;
        ev.compute_instance = d->computeInstanceId == NVML_INSTANCE_ID_INVALID ? -1 : (int)d->computeInstanceId;
        for (unsigned i = 0; i < e->n_gpus; i++)
                if (e->gpus[i].dev == d->device) {
                        ev.gpu_index = (int)e->gpus[i].index;
                        memcpy(ev.pci_bus_id, e->gpus[i].pci, sizeof(ev.pci_bus_id));
                }
        ev.time_known = true;
        ev.time = now_epoch();
        ev.message = strdup("NVML critical-error event");
        ev.raw = NULL;
        ev.source = "nvml";
        pthread_mutex_lock(&e->m);
        if (e->queue.n >= EV_QUEUE_MAX) {
                e->dropped++;
                xid_event_free(&ev);
        } else {
                xid_list_push(&e->queue, &ev);
        }
        pthread_mutex_unlock(&e->m);
}

static void *events_thread(void *p)
{
        struct gpu_events *e = p;
        char msg[200] = "";
        int r = events_setup(e, msg, sizeof(msg));
        setup_done(e, r, msg);
        while (r == 0) {
                pthread_mutex_lock(&e->m);
                bool stop = e->stop;
                pthread_mutex_unlock(&e->m);
                if (stop)
                        break;
                nvmlEventData_t d;
                memset(&d, 0, sizeof(d));
                nvmlReturn_t w = e->wait(e->set, &d, EV_WAIT_MS);
                if (w == NVML_SUCCESS && (d.eventType & NVML_EVENT_TYPE_XID_CRITICAL_ERROR))
                        queue_event(e, &d);
                else if (w != NVML_SUCCESS && w != NVML_ERROR_TIMEOUT)
                        break; /* GPU lost, shut down: the kernel log still has it */
        }
        if (r == 0) {
                e->set_free(e->set);
                e->shutdown();
        }
        pthread_mutex_lock(&e->m);
        e->finished = true;
        bool abandoned = e->abandoned;
        pthread_cond_broadcast(&e->ready);
        pthread_mutex_unlock(&e->m);
        if (abandoned) {
                if (e->lib)
                        dlclose(e->lib);
                events_free(e);
        }
        return NULL;
}

int gpu_events_open(const struct gpu_opts *o, struct gpu_events **ret, char *err, size_t errlen)
{
        struct gpu_events *e = calloc(1, sizeof(*e));
        if (!e)
                return -ENOMEM;
        pthread_mutex_init(&e->m, NULL);
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&e->ready, &ca);
        pthread_condattr_destroy(&ca);
        const char *path = o->nvml_lib ? o->nvml_lib : "libnvidia-ml.so.1";
        e->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (!e->lib) {
                snprintf(err, errlen, "no NVML library (%s): only the kernel log is followed", path);
                events_free(e);
                return -ENOENT;
        }
        pthread_t t;
        pthread_attr_t a;
        pthread_attr_init(&a);
        pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
        int pe = pthread_create(&t, &a, events_thread, e);
        pthread_attr_destroy(&a);
        if (pe) {
                dlclose(e->lib);
                events_free(e);
                return -pe;
        }
        /* wait for the set-up, but never longer than the deadline: a hung driver stays behind */
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        unsigned ms = o->timeout_ms ? o->timeout_ms : 5000;
        until.tv_sec += ms / 1000;
        until.tv_nsec += (long)(ms % 1000) * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
                until.tv_sec++;
                until.tv_nsec -= 1000000000L;
        }
        pthread_mutex_lock(&e->m);
        int w = 0;
        while (!e->setup_done && w != ETIMEDOUT)
                w = pthread_cond_timedwait(&e->ready, &e->m, &until);
        bool done = e->setup_done;
        int r = done ? e->setup_error : -ETIMEDOUT;
        if (r < 0) {
                if (done)
                        snprintf(err, errlen, "NVML events: %s", e->setup_message);
                else
                        snprintf(err, errlen, "NVML events: the driver did not answer within %.3g s", ms / 1000.0);
                e->stop = true;
                e->abandoned = true; /* the thread frees everything when (if) it ends */
                bool finished = e->finished;
                pthread_mutex_unlock(&e->m);
                if (finished) {
                        dlclose(e->lib);
                        events_free(e);
                }
                return r;
        }
        pthread_mutex_unlock(&e->m);
        *ret = e;
        return 0;
}

unsigned gpu_events_gpus(const struct gpu_events *e)
{
        return e ? e->n_registered : 0;
}

int gpu_events_read(struct gpu_events *e, struct xid_list *out)
{
        if (!e)
                return 0;
        pthread_mutex_lock(&e->m);
        struct xid_list q = e->queue;
        memset(&e->queue, 0, sizeof(e->queue));
        pthread_mutex_unlock(&e->m);
        int r = xid_list_merge(out, &q, "nvml");
        xid_list_free(&q);
        return r;
}

void gpu_events_close(struct gpu_events *e)
{
        if (!e)
                return;
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += 2; /* a wait returns every EV_WAIT_MS unless the driver hangs */
        pthread_mutex_lock(&e->m);
        e->stop = true;
        int w = 0;
        while (!e->finished && w != ETIMEDOUT)
                w = pthread_cond_timedwait(&e->ready, &e->m, &until);
        bool finished = e->finished;
        if (!finished)
                e->abandoned = true;
        pthread_mutex_unlock(&e->m);
        if (finished) {
                dlclose(e->lib);
                events_free(e);
        }
}
