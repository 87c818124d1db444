#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# Slurm Epilog (slurm.conf: Epilog=/etc/slurm/ghostvram/epilog.sh): after each job, look at
# the GPUs the job used (SLURM_JOB_GPUS, else every GPU), end what the job left holding GPU
# memory (its cgroup when it still exists under cgroup v2, its orphaned workers through
# `ghostvram reclaim`), measure the memory coming back, and drain the node with the reason when
# it does not. Idempotent (a second run finds nothing to do, or drains with the same reason),
# bounded by GV_TIME_LIMIT, and it always exits 0: a failing Epilog makes Slurm drain the node
# with "Epilog error", which tells nobody what is wrong. docs/fleet.md.
. "$(dirname "$(readlink -f "$0")")/ghostvram-slurm-lib.sh"
gv_load epilog

# Slurm ends an Epilog that overruns PrologEpilogTimeout: SIGTERM to its process group, SIGKILL
# a moment later. What reclaim does is logged line by line as it happens (gv_reclaim), so the
# log keeps it up to the kill; reclaim itself stops on the SIGTERM and says what it did and left.
GV_STOPPED=""
for sig in TERM INT HUP; do
        # shellcheck disable=SC2064 # the signal's name, now
        trap "GV_STOPPED=$sig" "$sig"
done
gv_stopped() {
        [ -n "$GV_STOPPED" ] || return 1
        gv_log "stopped by SIG$GV_STOPPED after $((SECONDS - GV_START)) s (the time limit?): what was done is above"
        exit 0
}

# gv_reclaim LABEL ARGS...: `ghostvram reclaim ARGS`, each line of its output logged as it comes
# ("LABEL: line"). GV_OUT: the whole output, GV_RC: its exit status (124: the time limit).
shopt -s lastpipe
gv_reclaim() {
        local label=$1 line rc mark=$'\x01rc='
        shift
        GV_OUT="" GV_RC=""
        # the left side outlives a stop signal (a subshell drops our traps) to say reclaim's
        # status; reclaim, exec'd, gets the signal's default and stops with its report
        { trap : TERM INT HUP; gv_bounded --foreground "$limit" "$GHOSTVRAM" reclaim "$@" 2>&1; echo "$mark$?"; } | while :; do
                # a trapped stop signal interrupts read (status above 128): go on until the last line
                IFS= read -r line || { rc=$?; [ "$rc" -gt 128 ] && continue; break; }
                case $line in
                "$mark"*) GV_RC=${line#"$mark"} ;;
                "") ;;
                *)
                        gv_log "$label: $line"
                        GV_OUT+=$line$'\n'
                        ;;
                esac
        done
        : "${GV_RC:=124}"
}

gv_inspect job || exit 0
if [ -z "$GV_BAD" ]; then
        gv_log "GPU ${GV_SEL# } clean"
        exit 0
fi
gv_log "left behind: $(gv_describe)"

# The job's own cgroup, where Slurm's cgroup/v2 left it (a v1 job cgroup is removed by
# proctrack/cgroup before the Epilog runs; its orphans are ended below like any other).
gv_job_cgroup() {
        local cg2
        cg2=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
        [ -n "$cg2" ] && [ -n "$GV_JOB" ] || return 1
        gv_bounded 5 find "$cg2" -maxdepth 4 -type d -name "job_$GV_JOB" -print -quit 2>/dev/null | grep .
}

if [ "$GV_RECLAIM" = yes ]; then
        opts=(--yes --grace "$GV_GRACE" --wait "$GV_RECLAIM_WAIT" --confirm "$GV_CONFIRM"
                --noise-floor "$GV_NOISE_FLOOR")
        [ -n "$GV_POLICY" ] && opts+=(--policy "$GV_POLICY")
        limit=$(($(gv_secs "$GV_RECLAIM_WAIT") + $(gv_secs "$GV_CONFIRM") + 10))
        if cg=$(gv_job_cgroup) && [ -n "$(cat "$cg/cgroup.procs" 2>/dev/null)" ]; then
                gv_reclaim "reclaim --cgroup $cg" --cgroup "$cg" "${opts[@]}"
                mem=$(grep -E "^  GPU [0-9]+  +[0-9]+ MiB →" <<<"$GV_OUT" | sed 's/  */ /g; s/^ //' | paste -sd ';' -)
                gv_log "reclaim --cgroup $cg: exit $GV_RC: ${mem:-no measurement}: $(tail -n 1 <<<"${GV_OUT%$'\n'}")"
                gv_stopped
                gv_inspect job || exit 0
        fi
        for n in $GV_BAD; do
                [ "${GV_GHOST[$n]:-0}" -gt 0 ] || continue
                gv_reclaim "reclaim GPU $n" --gpu "$n" "${opts[@]}"
                # "GPU 1  3072 MiB → 0 MiB  freed 3072 MiB  back in 0.009 s": reclaim's measurement
                mem=$(grep -E "^  GPU $n  +[0-9]+ MiB →" <<<"$GV_OUT" | sed 's/  */ /g; s/^ //' | head -n 1)
                gv_log "reclaim GPU $n: exit $GV_RC: ${mem:-no measurement}: $(tail -n 1 <<<"${GV_OUT%$'\n'}")"
                gv_stopped
        done
fi

gv_inspect job || exit 0
if [ -z "$GV_BAD" ]; then
        gv_log "memory back on GPU ${GV_SEL# }"
        exit 0
fi
# a ghost is what the job left; a lost GPU or a task stuck in the driver is only seen after it
how="left by job ${GV_JOB:-?}, not freed"
for n in $GV_BAD; do [ "${GV_GHOST[$n]:-0}" -gt 0 ] || how="seen after job ${GV_JOB:-?}"; done
[ "$GV_RECLAIM" = yes ] || how="$how (GV_RECLAIM=$GV_RECLAIM)"
gv_drain "$(gv_describe) $how"
exit 0
