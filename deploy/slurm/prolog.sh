#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# Slurm Prolog (slurm.conf: Prolog=/etc/slurm/ghostvram/prolog.sh): refuse a job whose GPUs
# (SLURM_JOB_GPUS, else every GPU) hold a confirmed ghost, a lost GPU or a task stuck in the
# driver: drain the node with the reason and exit 1, which makes Slurm requeue the job (held,
# unless SchedulerParameters=nohold_on_prolog_fail) and keep the node drained. A clean GPU
# costs one scan (a few milliseconds on an idle node); an inspection failure lets the job run
# and says so, unless GV_DRAIN_ON_ERROR=yes. docs/fleet.md.
. "$(dirname "$(readlink -f "$0")")/ghostvram-slurm-lib.sh"
gv_load prolog

if ! gv_inspect job || [ -n "$GV_BLIND" ]; then
        # said by gv_blind; with GV_DRAIN_ON_ERROR=yes the node is drained: refuse the job too
        [ "$GV_DRAIN_ON_ERROR" = yes ] && exit 1
fi
[ -z "$GV_BAD" ] && exit 0
if gv_drain "$(gv_describe), job ${GV_JOB:-?} refused"; then
        gv_log "refused: $(gv_describe)"
        exit 1
fi
gv_log "not refused (the node was not drained): $(gv_describe)"
exit 0
