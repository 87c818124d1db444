# shellcheck shell=bash
# ghostvram-slurm-lib.sh: what epilog.sh, prolog.sh and healthcheck.sh share (sourced, from
# the directory the scripts are in). Settings: ghostvram-slurm.conf. docs/fleet.md.
#
# Every command runs under timeout(1) within the script's time limit. The GPUs are judged by
# `ghostvram check`: its exit status, its status line (one "GPU N: ..." part for each GPU that
# is not OK) and its performance data ('gpuN_ghost' is the confirmed ghost in bytes).

set -u
PATH=/usr/sbin:/usr/bin:/sbin:/bin:${PATH:-}

gv_load() { # ROLE
        GV_ROLE=$1
        GV_START=$SECONDS
        local conf=${GHOSTVRAM_SLURM_CONF:-/etc/ghostvram/slurm.conf}
        if [ -e "$conf" ]; then
                # shellcheck source=/dev/null
                . "$conf" || gv_log "cannot read $conf; defaults apply"
        fi
        : "${GHOSTVRAM:=/usr/bin/ghostvram}" "${GV_GPUS:=auto}" "${GV_RECLAIM:=yes}"
        # GV_RECLAIM_TIMEOUT: the old name of GV_RECLAIM_WAIT, still read from older configs
        : "${GV_GRACE:=5s}" "${GV_RECLAIM_WAIT:=${GV_RECLAIM_TIMEOUT:-20s}}" "${GV_POLICY:=}" "${GV_NOISE_FLOOR:=64}"
        : "${GV_CONFIRM:=2s}" "${GV_DRAIN:=yes}" "${GV_DRAIN_ON_ERROR:=no}" "${GV_RESUME:=yes}"
        : "${GV_TIME_LIMIT:=55}" "${GV_LOG_FILE:=}"
        GV_NODE=${GV_NODENAME:-${SLURMD_NODENAME:-$(hostname -s)}}
        GV_JOB=${SLURM_JOB_ID:-${SLURM_JOBID:-}}
        [ -n "${SLURM_CONF:-}" ] && export SLURM_CONF
        [ -n "${GHOSTVRAM_SIM:-}" ] && export GHOSTVRAM_SIM
        return 0
}

# One line to syslog and to GV_LOG_FILE.
gv_log() {
        local line="${GV_ROLE:-ghostvram-slurm}${GV_JOB:+ job $GV_JOB}: $*"
        logger -t ghostvram-slurm -p daemon.notice -- "$line" 2>/dev/null || true
        [ -n "${GV_LOG_FILE:-}" ] && printf '%s %s\n' "$(date -u +%FT%TZ)" "$line" >>"$GV_LOG_FILE" 2>/dev/null
        return 0
}

# Seconds left of GV_TIME_LIMIT.
gv_left() { echo $((GV_TIME_LIMIT - (SECONDS - GV_START))); }

# gv_bounded [--foreground] SECONDS CMD...: CMD under timeout(1), never past the time limit.
# 124: out of time. --foreground keeps CMD in our process group, so that the SIGTERM slurmd
# sends the group at its time limit reaches CMD too (timeout alone makes a group of its own).
gv_bounded() {
        local s left fg=()
        [ "$1" = --foreground ] && fg=(--foreground) && shift
        s=$1
        shift
        left=$(($(gv_left) - 1))
        [ "$s" -gt "$left" ] && s=$left
        [ "$s" -ge 1 ] || return 124
        timeout "${fg[@]}" -k 2 "$s" "$@"
}

# Seconds of a duration written as ghostvram takes it (5s, 500ms, 1m, 2).
gv_secs() {
        case $1 in
        *ms) echo $(((${1%ms} + 999) / 1000)) ;;
        *s) echo "${1%s}" ;;
        *m) echo $((${1%m} * 60)) ;;
        *) echo "$1" ;;
        esac
}

# gv_check: `ghostvram check` of every GPU. Sets GV_RC (its exit status; 124 when it ran out
# of time), GV_LINE (the status line without performance data), GV_ALL (every GPU index),
# GV_PART[N] (the status line's part for GPU N: set only for GPUs that are not OK) and
# GV_GHOST[N] (its confirmed ghost in bytes).
gv_check() {
        local out t conf perf p n
        t=$((GV_TIME_LIMIT / 3))
        [ "$t" -gt 20 ] && t=20
        [ "$t" -lt 3 ] && t=3
        conf=$GV_CONFIRM
        GV_ALL="" GV_LINE=""
        unset GV_PART GV_GHOST
        declare -gA GV_PART=() GV_GHOST=()
        out=$(gv_bounded $((t + $(gv_secs "$conf") + 3)) "$GHOSTVRAM" check -t "$t" --confirm "$conf" \
                --noise-floor "$GV_NOISE_FLOOR" -w 0 2>&1) && GV_RC=0 || GV_RC=$?
        out=${out%%$'\n'*}
        GV_LINE=${out%% | *}
        GV_LINE=${GV_LINE#GHOSTVRAM }
        case $out in
        *" | "*) perf=${out#* | } ;;
        *) perf="" ;;
        esac
        for p in $perf; do
                case $p in
                "'gpu"*"_ghost'="*)
                        n=${p#\'gpu}
                        n=${n%%_*}
                        GV_ALL="$GV_ALL $n"
                        p=${p#*=}
                        GV_GHOST[$n]=${p%%B*}
                        ;;
                esac
        done
        local rest=${GV_LINE#* - } part
        while [ -n "$rest" ]; do
                part=${rest%%; *}
                [ "$part" = "$rest" ] && rest="" || rest=${rest#*; }
                case $part in
                "GPU "[0-9]*": "*)
                        n=${part#GPU }
                        n=${n%%:*}
                        GV_PART[$n]=${part#*: }
                        ;;
                esac
        done
        [ "$GV_RC" -le 3 ] || GV_LINE="ghostvram check did not finish within the time limit (exit $GV_RC)"
        return 0
}

# The GPUs this job uses (GV_SEL): SLURM_JOB_GPUS under GV_GPUS=auto when Slurm set it, else
# every GPU check saw.
gv_select() {
        GV_SEL=$GV_ALL
        if [ "$GV_GPUS" = auto ] && [ -n "${SLURM_JOB_GPUS:-}" ]; then
                GV_SEL=$(tr ',' ' ' <<<"$SLURM_JOB_GPUS")
        fi
        return 0
}

# Is GPU N's part of the status line an inspection failure (UNKNOWN), not a finding?
gv_part_unknown() {
        case ${GV_PART[$1]:-} in
        "not inspected"* | "no process list"*) return 0 ;;
        esac
        return 1
}

# gv_problems: GV_BAD (selected GPUs with a finding: a confirmed ghost, lost, stuck in the
# driver) and GV_BLIND (selected GPUs that could not be inspected) from the last gv_check.
gv_problems() {
        local n
        GV_BAD="" GV_BLIND=""
        for n in $GV_SEL; do
                if [ -z "${GV_GHOST[$n]+x}" ] && [ -z "${GV_PART[$n]+x}" ]; then
                        GV_BLIND="$GV_BLIND $n"
                elif gv_part_unknown "$n"; then
                        GV_BLIND="$GV_BLIND $n"
                elif [ -n "${GV_PART[$n]:-}" ]; then
                        GV_BAD="$GV_BAD $n"
                fi
        done
        GV_BAD=${GV_BAD# } GV_BLIND=${GV_BLIND# }
        return 0
}

# "GPU 1 3072 MiB ghost (orphaned-holders, PIDs 4242 4250); GPU 3 lost (...)" for the GPUs
# listed in $1 (default GV_BAD).
gv_describe() {
        local n s="" list=${1-$GV_BAD}
        for n in $list; do s="$s; GPU $n ${GV_PART[$n]:-not seen by ghostvram check}"; done
        echo "${s#; }"
}

# The node's state and drain reason as `scontrol show node` prints them: GV_STATE, GV_REASON.
gv_node() {
        local out
        GV_STATE="" GV_REASON=""
        out=$(gv_bounded 10 scontrol show node "$GV_NODE" 2>/dev/null) || return 1
        GV_STATE=$(sed -n 's/.* State=\([^ ]*\).*/\1/p' <<<"$out" | head -1)
        GV_REASON=$(sed -n 's/^ *Reason=\(.*\) \[[^]]*\]$/\1/p; t; s/^ *Reason=\(.*\)$/\1/p' <<<"$out" | head -1)
        return 0
}

# The "GPU N" words of a reason, sorted: which GPUs it is about.
gv_gpus_of() { grep -oE 'GPU [0-9]+' <<<"$1" | sort -u | tr '\n' ' '; }

# gv_drain REASON: drain this node with "ghostvram: REASON", unless GV_DRAIN=no. A node
# already drained keeps its reason when it is someone else's, or ghostvram's about the same
# GPUs (the first reason names the job that left the ghost; a refused job's Epilog, a second
# run or the health check do not blur it). Returns 0 when the node is drained.
gv_drain() {
        local reason="ghostvram: $1"
        reason=${reason:0:250}
        if [ "$GV_DRAIN" != yes ]; then
                gv_log "would drain $GV_NODE (GV_DRAIN=$GV_DRAIN): $reason"
                return 1
        fi
        if gv_node && [[ $GV_STATE == *DRAIN* ]] && [ -n "$GV_REASON" ]; then
                if [[ $GV_REASON != ghostvram:* ]] || [ "$(gv_gpus_of "$GV_REASON")" = "$(gv_gpus_of "$reason")" ]; then
                        gv_log "$GV_NODE stays drained ($GV_REASON); seen now: $reason"
                        return 0
                fi
        fi
        if gv_bounded 10 scontrol update nodename="$GV_NODE" state=drain reason="$reason" 2>/dev/null; then
                gv_log "drained $GV_NODE: $reason"
                return 0
        fi
        gv_log "could not drain $GV_NODE (scontrol failed): $reason"
        return 1
}

# gv_inspect job|all: gv_check, then the job's GPUs (or every GPU) sorted into GV_BAD
# and GV_BLIND, each inspection failure logged (gv_blind). Returns 1 when nothing could be
# inspected at all.
gv_inspect() {
        GV_BAD="" GV_BLIND=""
        gv_check
        if [ "$GV_RC" -gt 3 ] || [ -z "$GV_ALL" ]; then
                gv_blind "$GV_LINE"
                return 1
        fi
        if [ "$1" = all ]; then
                GV_SEL=$GV_ALL
        else
                gv_select
        fi
        gv_problems
        [ -n "$GV_BLIND" ] && gv_blind "$(gv_describe "$GV_BLIND")"
        return 0
}

# An inspection failure: said as such, drained only with GV_DRAIN_ON_ERROR=yes.
gv_blind() { # WHAT
        if [ "$GV_DRAIN_ON_ERROR" = yes ]; then
                gv_log "cannot inspect GPUs: $1 (GV_DRAIN_ON_ERROR=yes: draining)"
                gv_drain "cannot inspect GPUs: $1" || true
        else
                gv_log "cannot inspect GPUs: $1 (not draining: no ghost was seen; GV_DRAIN_ON_ERROR=no)"
        fi
}
