/* sim_render: `ghostvram sim`'s output: a new host's summary, the driver's state. */
#include <stdio.h>
#include <stdlib.h>

#include "render/sim_render.h"
#include "util/escape.h"

void sim_init_text(FILE *f, const char *dir, unsigned gpus, uint64_t memory_mib, uint64_t reserved_mib)
{
        char *q = esc_shell_dup(dir); /* the commands are pasted: a path with a space is one word */
        fprintf(f, "simulated host in %s: %u GPU%s, %llu MiB each (%llu MiB reserved)\n"
                   "next: ghostvram sim run %s --gpu 0 --mib 1024 --workers 2\n"
                   "      GHOSTVRAM_SIM=%s ghostvram scan\n",
                q ? q : dir, gpus, gpus == 1 ? "" : "s", (unsigned long long)memory_mib,
                (unsigned long long)reserved_mib, q ? q : dir, q ? q : dir);
        free(q);
}

static void status_ctx(FILE *f, const struct sim_ctx_view *v)
{
        const struct sim_ctx *c = &v->ctx;
        fprintf(f, "  context %u: %llu MiB, ", c->id, (unsigned long long)(c->bytes >> 20));
        if (c->gi != SIM_GI_NONE)
                fprintf(f, "MIG GPU instance %u, ", c->gi);
        if (v->state == SIM_CTX_RELEASING) {
                fprintf(f, "released, %llu MiB left, freed in %.1f s\n", (unsigned long long)(v->charged_bytes >> 20),
                           (double)v->free_in_ms / 1000.0);
                return;
        }
        fprintf(f, "alive, owner ");
        if (v->owner_alive && v->owner_pid_here)
                fprintf(f, "PID %d (alive)", (int)v->owner_pid_here);
        else if (v->owner_alive)
                fprintf(f, "alive in another PID namespace");
        else
                fprintf(f, "dead");
        fprintf(f, ", NSpid");
        for (unsigned k = 0; k < c->n_nspid; k++)
                fprintf(f, "%s%d", k ? "/" : " ", (int)c->nspid[k]);
        fprintf(f, "%s\n", v->owner_alive ? "" : " (kept alive by inherited descriptors or mappings)");
}

void sim_status_text(FILE *f, const char *dir, const struct sim_status *s)
{
        const struct sim_client *cl = s->cl;
        const struct sim_knobs *k = s->k;
        const struct sim_observation *o = s->o;
        const struct sim_variant *var = sim_variant_find(k->driver);
        enum sim_pid_mode mode = sim_pid_mode_effective(k, var);
        fprintf(f, "simulated host %s\n  driver %s (variant %s), PIDs %s, struct versions %s%s\n", dir,
                   var ? var->driver_version : "?", k->driver,
                   mode == SIM_PID_HOST ? "as host PIDs" : "translated into the caller's namespace",
                   k->strict_versions ? "strict" : "relaxed", k->hidden_owner ? ", dead owners hidden" : "");
        if (k->free_delay_ms_per_gib)
                fprintf(f, "  a released context's memory falls to 0 over %llu ms per GiB from its release\n",
                           (unsigned long long)k->free_delay_ms_per_gib);
        if (k->hang_holds_lock)
                fprintf(f, "  a hung call holds the driver's API lock (every later NVML call waits behind it)%s\n",
                           s->api_lock_held ? ": held now" : "");
        for (unsigned g = 0; g < cl->host.n_gpus; g++) {
                const struct sim_gpu *gp = &cl->host.gpus[g];
                const struct sim_gpu_knobs *gk = &k->gpu[g];
                uint64_t used = sim_used_bytes(&cl->host, k, o, g);
                fprintf(f, "GPU %u: %s  %s  %s  /dev/nvidia%u\n", g, gp->name, gp->pci_bus_id, gp->uuid, gp->minor);
                fprintf(f, "  memory: %llu MiB total, %llu MiB reserved, %llu MiB used, %llu MiB free",
                           (unsigned long long)(gp->total_bytes >> 20), (unsigned long long)(gp->reserved_bytes >> 20),
                           (unsigned long long)(used >> 20),
                           (unsigned long long)((gp->total_bytes - gp->reserved_bytes - used) >> 20));
                if (gk->uncharged_mib)
                        fprintf(f, " (%llu MiB uncharged)", (unsigned long long)gk->uncharged_mib);
                fprintf(f, "\n  persistence %s, MIG %s%s%s%s%s\n", gk->persistence ? "on" : "off", sim_mig_on(gk) ? "on" : "off",
                           gk->lost ? ", LOST (GPU_IS_LOST)" : "", gk->hang[0] ? ", hangs in " : "", gk->hang,
                           gk->notsup ? ", some queries NOT_SUPPORTED" : "");
                for (unsigned m = 1; m <= gk->mig_instances; m++)
                        fprintf(f, "  MIG GPU instance %u (compute instance 0): %llu MiB, %llu MiB used, capability nodes "
                                   "nvidia-caps/nvidia-cap%u and nvidia-cap%u\n",
                                   m, (unsigned long long)(sim_mig_instance_total(&cl->host, g, gk->mig_instances) >> 20),
                                   (unsigned long long)(sim_mig_used_bytes(&cl->host, k, o, g, m) >> 20),
                                   sim_mig_cap_minor(gp->minor, m, false), sim_mig_cap_minor(gp->minor, m, true));
                for (size_t i = 0; i < o->n; i++)
                        if (o->ctx[i].ctx.gpu == g)
                                status_ctx(f, &o->ctx[i]);
        }
}

void sim_job_line(void *ctx, const char *line)
{
        fprintf(ctx, "%s\n", line);
}
