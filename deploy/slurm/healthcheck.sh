#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# Slurm HealthCheckProgram (slurm.conf: HealthCheckProgram=/etc/slurm/ghostvram/healthcheck.sh,
# HealthCheckInterval=300): drain the node while a GPU holds a confirmed ghost, is lost or has
# a task stuck in the driver; resume it once every GPU is clean, but only when the drain reason
# is ghostvram's own ("ghostvram: ..."). Slurm runs it without SLURM_CONF in the environment:
# set SLURM_CONF in the settings file where scontrol needs it. It never reclaims (that is the
# Epilog's job, when no job runs). Exit 0 healthy or resumed, 1 drained. docs/fleet.md.
. "$(dirname "$(readlink -f "$0")")/ghostvram-slurm-lib.sh"
gv_load healthcheck

gv_inspect all || exit 0
if [ -n "$GV_BAD" ]; then
        gv_drain "$(gv_describe)"
        exit 1
fi
[ -n "$GV_BLIND" ] && exit 0
if [ "$GV_RESUME" = yes ] && gv_node && [[ $GV_STATE == *DRAIN* ]] && [[ $GV_REASON == ghostvram:* ]]; then
        if gv_bounded 10 scontrol update nodename="$GV_NODE" state=resume 2>/dev/null; then
                gv_log "resumed $GV_NODE: every GPU clean (was: $GV_REASON)"
        else
                gv_log "could not resume $GV_NODE (scontrol failed)"
        fi
fi
exit 0
