#!/usr/bin/env bash
# deploy/slurm against a real Slurm (Debian's munged, slurmctld, slurmd started here, one
# node, proctrack/linuxproc so that a job's orphans outlive it) and the simulated driver. The
# simulated GPUs are plain files, which Slurm's GRES refuses as devices: the job is told its
# GPU in its environment and the scripts look at every GPU (SLURM_JOB_GPUS is exercised by
# running the Prolog by hand). Checked:
#   A. a job whose owner is killed while its workers keep 3072 MiB of GPU 1: the Epilog ends
#      the workers, the memory comes back, the node stays idle;
#   B. the same when the workers are protected (site policy): the Epilog drains the node with
#      the precise reason; run again, it changes nothing;
#   C. an administrator resumes the node: the Prolog refuses the next job (drained, the job
#      held, it never ran); SLURM_JOB_GPUS=0 (a clean GPU) is let through;
#   D. the HealthCheckProgram, with Slurm's environment (no SLURM_CONF): drains while the
#      ghost stays, resumes once it is gone, never resumes an administrator's drain; then
#      run by slurmd itself, it drains and resumes the node;
#   E. inspection failures (no process list; a hung driver within the time limit) are said
#      and drain nothing, unless GV_DRAIN_ON_ERROR=yes, whose reason says so;
#   F. a job cgroup left under cgroup v2 is ended by reclaim --cgroup;
#   G. with proctrack/cgroup (cgroup v1) Slurm itself ends the orphans before the Epilog,
#      which finds the memory back;
# and everything started is stopped.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/serve_lib.sh"
. "$(dirname "$0")/slurm_lib.sh"
: "${GV_SRC:?GV_SRC must name the source tree}"
[ "$(id -u)" -eq 0 ] || fail "needs root: slurmd runs the jobs and the Epilog as root"
gv_on_exit slurm_stop
DS="$GV_SRC/deploy/slurm"
T0=$SECONDS

sim_new --gpus 2 --memory 16384 --reserved 512
SETTINGS="$GV_TMP/ghostvram-slurm.conf"
GVLOG="$GV_TMP/ghostvram-slurm.log"
settings() { # extra lines
        cat >"$SETTINGS" <<EOF
GHOSTVRAM=$GV_BIN
GHOSTVRAM_SIM=$SIM
SLURM_CONF=$GV_TMP/slurm/slurm.conf
GV_NODENAME=$SL_NODE
GV_CONFIRM=300ms
GV_GRACE=1s
GV_RECLAIM_WAIT=5s
GV_TIME_LIMIT=30
GV_LOG_FILE=$GVLOG
$1
EOF
}
settings ""
# Slurm runs Prolog= and Epilog= without arguments: a two-line wrapper names the settings
for s in prolog epilog healthcheck; do
        printf '#!/bin/sh\nGHOSTVRAM_SLURM_CONF=%s exec %s "$@"\n' "$SETTINGS" "$DS/$s.sh" >"$GV_TMP/$s"
        chmod 755 "$GV_TMP/$s"
done
slurm_start "Prolog=$GV_TMP/prolog
Epilog=$GV_TMP/epilog
PrologEpilogTimeout=60"
note "Slurm up: node $(node_state) after $((SECONDS - T0)) s"

# The job: a training run on GPU $GV_JOB_GPU whose owner is killed while its two forked
# workers keep the context's descriptors (and so its 3072 MiB).
cat >"$GV_TMP/job.sh" <<'EOF'
#!/bin/bash
out=$("$GV_BIN" sim run "$SIM" --gpu "$GV_JOB_GPU" --mib 3072 --workers 2) || exit 1
echo "$out" >"$GV_TMP/job$SLURM_JOB_ID.pids"
kill -9 "$(awk '$1 == "owner" { print $2 }' <<<"$out")"
touch "$GV_TMP/job$SLURM_JOB_ID.ran"
EOF
export GV_BIN SIM GV_TMP
submit() { sbatch --parsable --export=ALL,GV_JOB_GPU=1 -o "$GV_TMP/job%j.out" "$GV_TMP/job.sh" | cut -d';' -f1; }
job_pids() { awk -v k="$2" '$1 == k { print $2 }' "$GV_TMP/job$1.pids"; }
log_has() { grep -qF -- "$1" "$GVLOG" || fail "the scripts' log has no '$1':$(printf '\n%s' "$(cat "$GVLOG")")"; }

note "A. the Epilog ends the dead job's workers; the memory comes back, the node stays idle"
J=$(submit)
slurm_wait_job "$J"
assert_eq "$(job_state "$J")" COMPLETED "job $J"
[ -e "$GV_TMP/job$J.ran" ] || fail "job $J did not run: $(cat "$GV_TMP/job$J.out")"
O=$(job_pids "$J" owner)
W=$(job_pids "$J" worker | tr '\n' ' ')
W=${W% }
log_has "epilog job $J: left behind: GPU 1 3072 MiB ghost (orphaned-holders, PIDs $O $W)"
log_has "epilog job $J: reclaim GPU 1: exit 0: GPU 1 3072 MiB → 0 MiB freed 3072 MiB back in"
log_has "epilog job $J: memory back on GPU 0 1"
for p in $W; do is_dead "$p" || fail "worker $p of job $J survived the Epilog"; done
assert_eq "$(used 1)" 0 "GPU 1 used after the Epilog"
assert_eq "$(node_state)" idle "node after job $J"
assert_eq "$(node_reason)" "" "no drain reason"

note "B. the workers cannot be ended (site policy): the Epilog drains with the reason"
printf 'comm gv-simcuda\n' >"$GV_TMP/protected"
settings "GV_POLICY=$GV_TMP/protected"
J=$(submit)
slurm_wait_job "$J"
assert_eq "$(job_state "$J")" COMPLETED "job $J"
O=$(job_pids "$J" owner)
W=$(job_pids "$J" worker | tr '\n' ' ')
W=${W% }
REASON="ghostvram: GPU 1 3072 MiB ghost (orphaned-holders, PIDs $O $W) left by job $J, not freed"
slurm_wait_node drained 10
assert_eq "$(node_reason)" "$REASON" "drain reason (scontrol show node)"
assert_eq "$(sinfo -h -R -n "$SL_NODE" -o '%50E|%T')" "${REASON:0:50}|drained" "sinfo -R"
log_has "epilog job $J: reclaim GPU 1: exit 1"
for p in $W; do is_dead "$p" && fail "protected worker $p was ended"; done
assert_eq "$(used 1)" $((3072 * MIB)) "GPU 1 still used"
note "   run again (idempotent): the same drain, nothing else"
env -i PATH="$PATH" SLURM_JOB_ID="$J" SLURMD_NODENAME="$SL_NODE" SLURM_CONF="$SLURM_CONF" "$GV_TMP/epilog" ||
        fail "the Epilog exits 0"
assert_eq "$(node_state)" drained "node after the second Epilog"
assert_eq "$(node_reason)" "$REASON" "the same reason"
read -ra B_WORKERS <<<"$W"

note "C. an administrator resumes the node: the Prolog refuses the next job on that GPU"
scontrol update nodename="$SL_NODE" state=resume
slurm_wait_node idle 10
J=$(submit)
for _ in $(seq 150); do
        case $(job_state "$J") in PENDING | REQUEUE_HOLD) [ "$(node_state)" = drained ] && break ;; esac
        sleep 0.1
done
assert_eq "$(node_state)" drained "node after the Prolog"
assert_eq "$(node_reason)" "ghostvram: GPU 1 3072 MiB ghost (orphaned-holders, PIDs $O $W), job $J refused" "Prolog's reason"
assert_eq "$(job_state "$J")" PENDING "refused job $J requeued"
assert_eq "$(job_reason "$J")" launch_failed_requeued_held "refused job $J held"
[ -e "$GV_TMP/job$J.ran" ] && fail "job $J ran on a GPU with a ghost"
log_has "prolog job $J: refused: GPU 1 3072 MiB ghost"
log_has "epilog job $J: $SL_NODE stays drained (ghostvram: GPU 1 3072 MiB ghost (orphaned-holders, PIDs $O $W), job $J refused)"
PRO_REASON=$(node_reason)
scancel "$J"
note "   SLURM_JOB_GPUS: a job on the clean GPU 0 is let through, one on GPU 1 is not"
pro() { env -i PATH="$PATH" SLURM_JOB_ID=99 SLURM_JOB_GPUS="$1" SLURMD_NODENAME="$SL_NODE" SLURM_CONF="$SLURM_CONF" "$GV_TMP/prolog"; }
pro 0 || fail "the Prolog refused a job on GPU 0"
pro 1 && fail "the Prolog let a job on GPU 1 through"
assert_eq "$(node_reason)" "$PRO_REASON" "the first reason stays"

note "D. HealthCheckProgram (Slurm's environment: no SLURM_CONF, no node name)"
hc() { env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin "$GV_TMP/healthcheck"; }
scontrol update nodename="$SL_NODE" state=resume
# a resumed node is "idle*" (not responding) until slurmd answers slurmctld's ping
slurm_wait_node idle 20
hc && fail "the health check passes a node with a ghost"
assert_eq "$(node_state)" drained "drained by the health check"
assert_eq "$(node_reason)" "ghostvram: GPU 1 3072 MiB ghost (orphaned-holders, PIDs $O $W)" "health check's reason"
kill_wait "${B_WORKERS[@]}"
hc || fail "the health check fails a clean node"
slurm_wait_node idle 10 # resumed by the health check
log_has "healthcheck: resumed $SL_NODE: every GPU clean (was: ghostvram: GPU 1"
scontrol update nodename="$SL_NODE" state=drain reason="admin: memory test"
hc || fail "health check on a clean node drained by an administrator"
assert_eq "$(node_state)" drained "an administrator's drain stays"
assert_eq "$(node_reason)" "admin: memory test" "an administrator's reason stays"
scontrol update nodename="$SL_NODE" state=resume
slurm_wait_node idle 10
note "   run by slurmd (HealthCheckProgram=, HealthCheckInterval=1): drains, then resumes"
cp "$SLURM_CONF" "$SLURM_CONF.before-hc"
printf 'HealthCheckProgram=%s\nHealthCheckInterval=1\n' "$GV_TMP/healthcheck" >>"$SLURM_CONF"
scontrol reconfigure
sim_run --gpu 1 --mib 3072 --workers 2
kill_wait "$OWNER"
slurm_wait_node drained 20
assert_eq "$(node_reason)" "ghostvram: GPU 1 3072 MiB ghost (orphaned-holders, PIDs $OWNER ${WORKERS[*]})" "slurmd's health check's reason"
kill_wait "${WORKERS[@]}"
slurm_wait_node idle 20
cp "$SLURM_CONF.before-hc" "$SLURM_CONF"
scontrol reconfigure

note "E. inspection failures: said, never a silent drain"
epi() { env -i PATH="$PATH" SLURM_JOB_ID=98 SLURMD_NODENAME="$SL_NODE" SLURM_CONF="$SLURM_CONF" "$GV_TMP/epilog"; }
"$GV_BIN" sim set "$SIM" notsup=1:processes >/dev/null
settings ""
epi || fail "the Epilog exits 0"
assert_eq "$(node_state)" idle "no drain on an inspection failure"
log_has "epilog job 98: cannot inspect GPUs: GPU 1 no process list from the driver"
log_has "(not draining: no ghost was seen; GV_DRAIN_ON_ERROR=no)"
settings "GV_DRAIN_ON_ERROR=yes"
epi || fail "the Epilog exits 0"
assert_eq "$(node_state)" drained "GV_DRAIN_ON_ERROR=yes drains"
case $(node_reason) in
"ghostvram: cannot inspect GPUs: GPU 1 no process list from the driver"*) ;;
*) fail "reason of an inspection failure: '$(node_reason)'" ;;
esac
scontrol update nodename="$SL_NODE" state=resume
"$GV_BIN" sim set "$SIM" notsup=none hang=any >/dev/null
settings "GV_TIME_LIMIT=8"
t=$SECONDS
epi || fail "the Epilog exits 0"
[ $((SECONDS - t)) -le 9 ] || fail "a hung driver held the Epilog $((SECONDS - t)) s (limit 8 s)"
log_has "epilog job 98: cannot inspect GPUs: UNKNOWN - "
assert_eq "$(node_state)" idle "no drain on a hung driver"
"$GV_BIN" sim set "$SIM" hang=none >/dev/null

note "F. the job's cgroup still exists (cgroup v2): the Epilog ends it with reclaim --cgroup"
CG2=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
[ -n "$CG2" ] || fail "no cgroup2 mount here"
JID=$((900000 + SL_ID % 90000)) # a job number this Slurm never reaches
# a cgroup of this run's own ($$ is 1 in every PID namespace: the name of $GV_TMP tells runs apart)
CGBASE="$CG2/gv-slurm.${GV_TMP##*/}"
CGJOB="$CGBASE/job_$JID"
GV_EXIT_HOOKS=('for _ in $(seq 50); do rmdir "$CGJOB" "$CGBASE" 2>/dev/null; [ -d "$CGBASE" ] || break; sleep 0.1; done' slurm_stop)
mkdir -p "$CGJOB" || fail "cannot create a cgroup under $CG2"
settings ""
sim_run --gpu 1 --mib 2048 --workers 2
for p in "$OWNER" "${WORKERS[@]}"; do echo "$p" >"$CGJOB/cgroup.procs" || fail "cannot move $p into $CGJOB"; done
kill_wait "$OWNER"
env -i PATH="$PATH" SLURM_JOB_ID="$JID" SLURMD_NODENAME="$SL_NODE" SLURM_CONF="$SLURM_CONF" "$GV_TMP/epilog" ||
        fail "the Epilog exits 0"
log_has "epilog job $JID: reclaim --cgroup $CGJOB: exit 0: GPU 1 2048 MiB → 0 MiB freed 2048 MiB back in"
log_has "epilog job $JID: memory back on GPU 0 1"
for p in "${WORKERS[@]}"; do is_dead "$p" || fail "worker $p in the job's cgroup survived"; done
assert_eq "$(cat "$CGJOB/cgroup.procs")" "" "the job's cgroup is empty"
assert_eq "$(used 1)" 0 "GPU 1 used"
assert_eq "$(node_state)" idle "node after the cgroup's Epilog"

note "G. proctrack/cgroup: Slurm ends the job's orphans itself; the Epilog finds the memory back"
slurm_stop
SL_PROCTRACK=proctrack/cgroup slurm_start "Prolog=$GV_TMP/prolog
Epilog=$GV_TMP/epilog
PrologEpilogTimeout=60"
J=$(submit)
slurm_wait_job "$J"
assert_eq "$(job_state "$J")" COMPLETED "job $J"
for p in $(job_pids "$J" worker); do is_dead "$p" || fail "proctrack/cgroup left worker $p of job $J"; done
log_has "epilog job $J: GPU 0 1 clean"
assert_eq "$(used 1)" 0 "GPU 1 used"
assert_eq "$(node_state)" idle "node after job $J"

note "everything started is stopped"
daemons=("${SL_PIDS[@]}")
slurm_stop
for p in "${daemons[@]}"; do kill -0 "$p" 2>/dev/null && fail "daemon $p ($(cat "/proc/$p/comm")) still runs"; done
left=$(holders_left)
[ -z "$left" ] || fail "still running: $left"
note "took $((SECONDS - T0)) s"
echo "PASS"
