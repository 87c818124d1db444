#!/usr/bin/env bash
# Description families: processes that share an open file description of an NVIDIA node
# (inherited across fork, taken with pidfd_getfd, received with SCM_RIGHTS) are one family,
# and the diagnosis ties a family to a dead owner as a whole. For each shape: the verdict, the
# attributed PIDs of each GPU, the confidence of the verdict, each family (.gpus[].families[]:
# members, link, the owner it is tied to, confidence, default target) and reclaim's planned
# targets (dry run). Rules: docs/verdicts.md.
#   a link by number (process group, session, parent of the dead owner) of one member ties the
#     whole family, at that link's confidence (high with nvidia-uvm): default targets;
#   a family with a live NVML-listed owner in it is that job's: never attributed, and
#     `reclaim --pid` of a member is refused without --force;
#   elimination (the only free family for the only dead listed owner nobody else explains):
#     medium, a default target only when the family's process-group or session leader is gone;
#   PID order (the dead listed owner whose PID most closely precedes the family's lowest PID):
#     low, never a default target;
#   a process that holds no nvidiactl is never attributed and never a target.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/scan_lib.sh"
need_tool setsid util-linux
export ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0"
GV_SIMFD="$GV_BUILD/sim/gv-simfd"
[ -x "$GV_SIMFD" ] || fail "$GV_SIMFD is not built"

link_of() { jq -r ".gpus[] | select(.index == $1) | .processes[] | select(.pid == $2) | .attribution.link" <<<"$S"; }
attr_of() { jq -r ".gpus[] | select(.index == $1) | .processes[] | select(.pid == $2) | .attribution.$3" <<<"$S"; }
# the family of GPU $1 that has member $2: "MEMBERS(,) LINK TO_PID CONFIDENCE DEFAULT_TARGET"
fam_of() {
        jq -r ".gpus[] | select(.index == $1) | .families[] | select(.member_pids | index($2))
               | \"\(.member_pids | sort | map(tostring) | join(\",\")) \(.link) \(.to_pid) \(.confidence) \(.default_target)\"" <<<"$S"
}
csv() { sorted "$@" | tr ' ' ','; }
never_attributed() {
        local p
        for p in "$@"; do
                [ "$(jq "[.gpus[].processes[] | select(.pid == $p and .attribution != null)] | length" <<<"$S")" = 0 ] ||
                        fail "PID $p must never be attributed: $(jq -c "[.gpus[] | {index, p: [.processes[] | select(.pid == $p)]}]" <<<"$S")"
        done
}
never_target() {
        local p
        for p in "$@"; do
                [ "$(jq "[.plan.targets[] | select(.pid == $p)] | length" <<<"$R")" = 0 ] || fail "PID $p must never be a target"
        done
}
# every PID given has the same family number, not null, in scan's processes of GPU $1
same_family() {
        local g=$1 f p
        shift
        f=$(attr_of "$g" "$1" family)
        [[ "$f" =~ ^[0-9]+$ ]] || fail "PID $1 on GPU $g has family '$f'"
        for p in "$@"; do assert_eq "$(attr_of "$g" "$p" family)" "$f" "family of $p (GPU $g)"; done
}
snap() { GHOSTVRAM_SIM="$SIM" "$GV_BIN" snapshot --json; }
snap_family() { jq -r ".holders[] | select(.pid == $2) | .family" <<<"$1"; }
# field 3.. of /proc/PID/stat: [1] parent, [2] process group, [3] session
shape() { _gv_stat "$1" || fail "process $1 is gone"; echo "${_GV_ST[1]} ${_GV_ST[2]} ${_GV_ST[3]}"; }
# the NVIDIA device descriptors of process $1 (links to $SIM/dev/nvidia*), one path a line
nv_links() {
        local f
        for f in "/proc/$1/fd/"*; do readlink "$f" 2>/dev/null || true; done | grep "^$(realpath "$SIM")/dev/nvidia" || true
}
# gv-simfd in the background as its own session (an unrelated process: not of the job, not of
# this script's group), stdout in FILE: sets FDPID; waits for a line matching WHAT. pidfd_getfd
# refused (exit 3: no ptrace rights over the worker) is a restriction of the machine.
simfd_bg() { # FILE WHAT ARGS...
        local f=$1 what=$2 i rc
        shift 2
        setsid "$GV_SIMFD" "$@" >"$f" 2>&1 </dev/null &
        FDPID=$!
        track "$FDPID"
        for i in $(seq 3000); do
                if grep -q "$what" "$f" 2>/dev/null; then
                        disown "$FDPID" # no "Killed" line from bash when it is ended
                        return 0
                fi
                if is_dead "$FDPID"; then
                        set +e; wait "$FDPID"; rc=$?; set -e
                        [ "$rc" = 3 ] && skip "pidfd_getfd is not allowed here (needs ptrace rights over the job; run as root): $(cat "$f")"
                        fail "gv-simfd $* exited $rc: $(cat "$f")"
                fi
                sleep 0.01
        done
        fail "gv-simfd $* did not say '$what': $(cat "$f")"
}
# until GPU $1's used memory is $2 MiB (5 s)
wait_used() {
        local i
        for i in $(seq 100); do [ "$(used "$1")" = $(($2 * MIB)) ] && return 0; sleep 0.05; done
        fail "GPU $1 used $(used "$1") bytes, expected $2 MiB"
}

note "1. GPU 0: one worker setsid, one in the owner's group; GPU 1: every worker setsid; both owners killed"
sim_new --gpus 2 --memory 16384 --reserved 512
sim_run --gpu 0 --mib 2048 --workers 2 --setsid-workers 1 --busy
OA=$OWNER A=("${WORKERS[@]}")
sim_run --gpu 1 --mib 1024 --workers 2 --worker-setsid --busy
OB=$OWNER B=("${WORKERS[@]}")
assert_eq "$(shape "${A[0]}")" "$OA ${A[0]} ${A[0]}" "GPU 0's first worker leads its own session"
assert_eq "$(shape "${A[1]}")" "$OA $OA $OA" "GPU 0's second worker is in the owner's group"
for w in "${B[@]}"; do assert_eq "$(shape "$w")" "$OB $w $w" "GPU 1's worker $w leads its own session"; done
kill_wait "$OA" "$OB"
assert_eq "$(used 0) $(used 1)" "$((2048 * MIB)) $((1024 * MIB))" "the workers keep both contexts"
scan_rc
assert_eq "$RC" 1 "exit with the ghosts"
assert_eq "$(verdict 0)" orphaned-holders "GPU 0 verdict"
assert_eq "$(attributed 0)" "$(sorted "${A[@]}")" "GPU 0: both of its workers, the setsid one through its family"
assert_eq "$(confidence 0)" high "GPU 0: a process-group link with nvidia-uvm"
assert_eq "$(link_of 0 "${A[1]}")" process-group "the worker in the owner's group"
assert_eq "$(link_of 0 "${A[0]}")" family "the setsid worker, tied through its family"
for w in "${A[@]}"; do assert_eq "$(attr_of 0 "$w" default_target)" true "GPU 0 worker $w is a default target"; done
same_family 0 "${A[@]}"
assert_eq "$(fam_of 0 "${A[0]}")" "$(csv "${A[@]}") process-group $OA high true" "GPU 0's family"
assert_eq "$(verdict 1)" orphaned-holders "GPU 1 verdict"
assert_eq "$(attributed 1)" "$(sorted "${B[@]}")" "GPU 1: its own workers, never GPU 0's"
assert_eq "$(confidence 1)" medium "GPU 1: elimination"
for w in "${B[@]}"; do
        assert_eq "$(link_of 1 "$w")" elimination "GPU 1 worker $w's link"
        assert_eq "$(attr_of 1 "$w" default_target)" false "GPU 1 worker $w is no default target (its leaders live)"
done
same_family 1 "${B[@]}"
[ "$(attr_of 0 "${A[0]}" family)" != "$(attr_of 1 "${B[0]}" family)" ] || fail "the two jobs are two families"
assert_eq "$(fam_of 1 "${B[0]}")" "$(csv "${B[@]}") elimination $OB medium false" "GPU 1's family"
plan_rc
assert_eq "$(targets)" "$(sorted "${A[@]}")" "reclaim: GPU 0's family only"
s=$(snap)
fa=$(snap_family "$s" "${A[0]}") fb=$(snap_family "$s" "${B[0]}")
[[ "$fa" =~ ^[0-9]+$ && "$fb" =~ ^[0-9]+$ && "$fa" != "$fb" ]] || fail "snapshot: families '$fa' and '$fb'"
assert_eq "$(snap_family "$s" "${A[1]}")" "$fa" "snapshot: GPU 0's workers, one family"
assert_eq "$(snap_family "$s" "${B[1]}")" "$fb" "snapshot: GPU 1's workers, one family"
kill_wait "${A[@]}" "${B[@]}"

note "2. two dead jobs on GPU 0: A (setsid workers) started first, B (plain workers)"
sim_new --gpus 2 --memory 16384 --reserved 512
sim_run --gpu 0 --mib 3000 --workers 2 --worker-setsid
OA=$OWNER A=("${WORKERS[@]}")
sim_run --gpu 0 --mib 1500 --workers 2
OB=$OWNER B=("${WORKERS[@]}")
kill_wait "$OA" "$OB"
assert_eq "$(used 0)" $((4500 * MIB)) "both contexts kept"
scan_rc
assert_eq "$(verdict 0)" orphaned-holders "verdict"
assert_eq "$(attributed 0)" "$(sorted "${A[@]}" "${B[@]}")" "all four workers"
assert_eq "$(confidence 0)" medium "the lowest of the links: A's elimination"
for w in "${B[@]}"; do
        assert_eq "$(link_of 0 "$w")" process-group "B's worker $w"
        assert_eq "$(attr_of 0 "$w" default_target)" true "B's worker $w is a default target"
done
for w in "${A[@]}"; do
        assert_eq "$(link_of 0 "$w")" elimination "A's worker $w"
        assert_eq "$(attr_of 0 "$w" default_target)" false "A's worker $w is no default target (its leaders live)"
done
assert_eq "$(fam_of 0 "${B[0]}")" "$(csv "${B[@]}") process-group $OB high true" "B's family"
assert_eq "$(fam_of 0 "${A[0]}")" "$(csv "${A[@]}") elimination $OA medium false" "A's family"
jq -r '.gpus[0].findings[0].summary' <<<"$S" | grep -q "held by 4 orphaned processes of 2 dead jobs" ||
        fail "the headline counts the dead jobs: $(jq -r '.gpus[0].findings[0].summary' <<<"$S")"
plan_rc
assert_eq "$(targets)" "$(sorted "${B[@]}")" "reclaim: B's workers"
assert_eq "$(jq -r '.gpus[] | select(.index == 0) | .expected_bytes' <<<"$R")" $((1500 * MIB)) \
        "reclaim expects B's 1500 MiB back, not the GPU's whole ghost"
plan_rc --yes --grace 2s --wait 20s
assert_eq "$PRC" 0 "B's memory came back: $(jq -r '.summary' <<<"$R")"
assert_eq "$(used 0)" $((3000 * MIB)) "A's 3000 MiB stay, as the plan said"
for w in "${A[@]}"; do is_dead "$w" && fail "A's worker $w was not in the plan"; done
kill_wait "${A[@]}" "${B[@]}"

note "3. an unrelated holder of nvidia0 and nvidia-uvm (no nvidiactl) beside a dead launcher job"
sim_new --gpus 2 --memory 16384 --reserved 512
bash -c "exec 3<'$SIM/dev/nvidia0' 4<'$SIM/dev/nvidia-uvm'; exec -a gv-bgholder sleep 601" &
U=$!
disown "$U"
track "$U"
wait_holder "$U" gv-bgholder
sim_run --gpu 0 --mib 1024 --workers 2 --launcher-exits
W=("${WORKERS[@]}")
kill_wait "$OWNER"
assert_eq "$(used 0)" $((1024 * MIB)) "the workers keep the context"
scan_rc
assert_eq "$(verdict 0)" orphaned-holders "verdict"
assert_eq "$(attributed 0)" "$(sorted "${W[@]}")" "the launcher job's workers, never the unrelated holder"
never_attributed "$U"
assert_eq "$(confidence 0)" medium "their group's leader is gone"
plan_rc
assert_eq "$(targets)" "$(sorted "${W[@]}")" "reclaim: the workers (their leader gone)"
never_target "$U"
s=$(snap)
fw=$(snap_family "$s" "${W[0]}")
[[ "$fw" =~ ^[0-9]+$ ]] || fail "snapshot: the workers' family is '$fw'"
[ "$(snap_family "$s" "$U")" != "$fw" ] || fail "snapshot: the unrelated holder is not of the workers' family"
kill_wait "$U" "${W[@]}"

note "4. two launcher jobs, GPU 0 (launcher alive, stopped) and GPU 1 (launcher killed); both owners killed"
sim_new --gpus 2 --memory 16384 --reserved 512
sim_run --gpu 0 --mib 2048 --workers 2 --launcher
LA=$LAUNCHER OA=$OWNER A=("${WORKERS[@]}")
# a launcher that outlives its child (an elastic agent): the simulated one exits with its
# child like a shell script, so it is stopped here and cannot
kill -STOP "$LA"
sim_run --gpu 1 --mib 1024 --workers 2 --launcher
LB=$LAUNCHER OB=$OWNER B=("${WORKERS[@]}")
kill_wait "$OA" "$OB" "$LB" # the launcher of GPU 1's job: it exits once its child is gone, or now
assert_eq "$(used 0) $(used 1)" "$((2048 * MIB)) $((1024 * MIB))" "the workers keep both contexts"
scan_rc
assert_eq "$(verdict 0)" orphaned-holders "GPU 0 verdict"
assert_eq "$(attributed 0)" "$(sorted "${A[@]}")" "GPU 0: exactly its own two workers"
assert_eq "$(verdict 1)" orphaned-holders "GPU 1 verdict"
assert_eq "$(attributed 1)" "$(sorted "${B[@]}")" "GPU 1: exactly its own two workers"
assert_eq "$(fam_of 0 "${A[0]}" | cut -d' ' -f1,3)" "$(csv "${A[@]}") $OA" "GPU 0's family, tied to its own owner"
assert_eq "$(fam_of 1 "${B[0]}" | cut -d' ' -f1,3)" "$(csv "${B[@]}") $OB" "GPU 1's family, tied to its own owner"
plan_rc
never_target "${A[@]}" # their group's leader (the launcher) lives: whichever rule, not a default target
kill -9 "$LA" 2>/dev/null || true
kill -CONT "$LA" 2>/dev/null || true
kill_wait "$LA" "${A[@]}" "${B[@]}"

note "5. a descriptor of nvidiactl taken with pidfd_getfd by an unrelated process; then the workers killed"
sim_new --gpus 2 --memory 16384 --reserved 512
sim_run --gpu 0 --mib 1024 --workers 2 --busy
O=$OWNER W=("${WORKERS[@]}")
kill_wait "$O"
simfd_bg "$GV_TMP/take.out" '^ready' take "${W[0]}" "$SIM/dev/nvidiactl"
T=$FDPID
n_ctl=$(nv_links "${W[0]}" | grep -c '/nvidiactl$')
assert_eq "$(cat "$GV_TMP/take.out")" "ready $n_ctl" "the taker took every nvidiactl descriptor of the worker"
assert_eq "$(nv_links "$T" | sed 's|.*/||' | sort -u)" nvidiactl "the taker holds nvidiactl only"
scan_rc
assert_eq "$(attributed 0)" "$(sorted "${W[@]}" "$T")" "while the workers live: the taker is of their family"
assert_eq "$(link_of 0 "$T")" family "the taker's link"
assert_eq "$(fam_of 0 "$T")" "$(csv "${W[@]}" "$T") process-group $O high true" "the family with the taker"
kill_wait "${W[@]}"
sleep 0.3
assert_eq "$(used 0)" $((1024 * MIB)) "the taker keeps the context"
# alone, a process holding nvidiactl and nothing else looks like a monitor (nvidia-smi, the
# persistence daemon): no rule may name it, and it is never a target
scan_rc
# (in a PID namespace the dead PID may as well be out of sight: the memory is someone else's there)
want=stale-owner
[ -n "${GV_IN_PIDNS:-}" ] && want=invisible-here
assert_eq "$(verdict 0)" "$want" "verdict: the dead owner is listed, no CUDA process holds the GPU"
assert_eq "$(attributed 0)" "" "the lone taker is not attributed"
plan_rc
assert_eq "$(targets)" "" "no default target"
kill_wait "$T"
wait_used 0 0

note "6. the descriptors passed over a unix socket (SCM_RIGHTS) to an unrelated process; then the workers killed"
sim_new --gpus 2 --memory 16384 --reserved 512
sim_run --gpu 0 --mib 1024 --workers 2 --busy
O=$OWNER W=("${WORKERS[@]}")
kill_wait "$O"
simfd_bg "$GV_TMP/recv.out" '^listening' recv "$GV_TMP/fd.sock"
RCV=$FDPID
n_nv=$(nv_links "${W[1]}" | wc -l)
set +e
sent=$("$GV_SIMFD" send "${W[1]}" "$GV_TMP/fd.sock" "$SIM/dev/nvidiactl" "$SIM/dev/nvidia-uvm" "$SIM/dev/nvidia0" "$SIM/dev/nvidia1" 2>&1)
rc=$?
set -e
[ "$rc" = 3 ] && skip "pidfd_getfd is not allowed here (needs ptrace rights over the job; run as root): $sent"
assert_eq "$rc $sent" "0 sent $n_nv" "the sender passed every NVIDIA descriptor of the worker"
wait_for_line "$GV_TMP/recv.out" '^ready'
assert_eq "$(sed -n 2p "$GV_TMP/recv.out")" "ready $n_nv" "the receiver got them"
kill_wait "${W[@]}"
sleep 0.3
assert_eq "$(used 0)" $((1024 * MIB)) "the receiver keeps the context"
scan_rc
# its parent (this script) lives: a live process started it, so it is no dead job's family by
# elimination, only the low candidate of the orphan rule
assert_eq "$(verdict 0)" orphaned-holders "verdict"
assert_eq "$(attributed 0)" "$RCV" "the receiver is the one holder"
# (in a PID namespace this script is PID 1: a child of PID 1 cannot be told from one reparented
# to it, so the receiver is the only family left, by elimination)
if [ -n "${GV_IN_PIDNS:-}" ]; then
        assert_eq "$(fam_of 0 "$RCV")" "$RCV elimination $O medium false" "the receiver's family"
else
        assert_eq "$(confidence 0)" low "a candidate: started by a live process"
        assert_eq "$(fam_of 0 "$RCV")" "$RCV orphan $O low false" "the receiver's family"
fi
plan_rc
assert_eq "$(targets)" "" "no default target"
kill_wait "$RCV"
wait_used 0 0

note "7. 8 GPUs, dead jobs with plain workers on GPUs 3 and 6, every process holding every node"
sim_new --gpus 8 --memory 16384 --reserved 512
sim_run --gpu 3 --mib 1024 --workers 2
O3=$OWNER W3=("${WORKERS[@]}")
sim_run --gpu 6 --mib 2048 --workers 2
O6=$OWNER W6=("${WORKERS[@]}")
for w in "${W3[@]}" "${W6[@]}"; do
        assert_eq "$(nv_links "$w" | sed 's|.*/||' | sort -u | paste -sd' ')" \
                "nvidia-uvm nvidia0 nvidia1 nvidia2 nvidia3 nvidia4 nvidia5 nvidia6 nvidia7 nvidiactl" "worker $w holds every node"
done
kill_wait "$O3" "$O6"
scan_rc
for g in 0 1 2 3 4 5 6 7; do
        case $g in
        3) assert_eq "$(attributed 3)" "$(sorted "${W3[@]}")" "GPU 3: its job's workers" ;;
        6) assert_eq "$(attributed 6)" "$(sorted "${W6[@]}")" "GPU 6: its job's workers" ;;
        *) assert_eq "$(verdict $g) $(attributed $g)" "ok " "GPU $g" ;;
        esac
done
for g in 3 6; do
        assert_eq "$(verdict $g)" orphaned-holders "GPU $g verdict"
        assert_eq "$(confidence $g)" high "GPU $g confidence"
done
assert_eq "$(fam_of 3 "${W3[0]}")" "$(csv "${W3[@]}") process-group $O3 high true" "GPU 3's family"
assert_eq "$(fam_of 6 "${W6[0]}")" "$(csv "${W6[@]}") process-group $O6 high true" "GPU 6's family"
plan_rc
assert_eq "$(targets)" "$(sorted "${W3[@]}" "${W6[@]}")" "reclaim: both jobs' workers"
for p in "${W6[@]}"; do assert_eq "$(jq -r ".plan.targets[] | select(.pid == $p) | .gpu_index" <<<"$R")" 6 "GPU of $p"; done
kill_wait "${W3[@]}" "${W6[@]}"

note "8. a family with a live listed owner: an unrelated process that took a live job's descriptors, beside a dead job"
sim_new --gpus 2 --memory 16384 --reserved 512
sim_run --gpu 0 --mib 1024 --workers 1
OL=$OWNER L=("${WORKERS[@]}")
sim_run --gpu 0 --mib 2048 --workers 2 --worker-setsid
OD=$OWNER D=("${WORKERS[@]}")
kill_wait "$OD"
simfd_bg "$GV_TMP/take.out" '^ready' take "${L[0]}" "$SIM/dev/nvidiactl" "$SIM/dev/nvidia-uvm" "$SIM/dev/nvidia0" "$SIM/dev/nvidia1"
T=$FDPID
assert_eq "$(nv_links "$T" | wc -l)" "$(nv_links "${L[0]}" | wc -l)" "the taker holds every NVIDIA descriptor of the live job's worker"
scan_rc
assert_eq "$(verdict 0)" orphaned-holders "verdict: the dead job's ghost"
assert_eq "$(attributed 0)" "$(sorted "${D[@]}")" "only the dead job's workers"
never_attributed "$T" "$OL" "${L[@]}"
assert_eq "$(confidence 0)" medium "the dead job's family by elimination"
assert_eq "$(fam_of 0 "${D[0]}")" "$(csv "${D[@]}") elimination $OD medium false" "the dead job's family"
plan_rc
assert_eq "$(targets)" "" "no default target"
plan_rc --pid "$T"
[ "$PRC" != 0 ] || fail "reclaim --pid of a live job's family member must be refused"
never_target "$T"
assert_eq "$(jq "[.plan.skipped[] | select(.pid == $T)] | length" <<<"$R")" 1 "the taker is skipped, with its rule"
plan_rc --pid "$T" --force
assert_eq "$(targets)" "$T" "with --force it is the plan"
kill_wait "$T" "${D[@]}" "${L[@]}" "$OL"

note "9. PID order: two dead jobs on GPU 0, every worker setsid"
sim_new --gpus 2 --memory 16384 --reserved 512
for try in 1 2; do
        sim_run --gpu 0 --mib 1024 --workers 2 --worker-setsid
        OA=$OWNER A=("${WORKERS[@]}")
        sim_run --gpu 0 --mib 512 --workers 2 --worker-setsid
        OB=$OWNER B=("${WORKERS[@]}")
        # PIDs wrap around (pid_max): the rule needs them in the order the jobs started
        [ "$OA" -lt "${A[0]}" ] && [ "${A[1]}" -lt "$OB" ] && [ "$OB" -lt "${B[0]}" ] && break
        [ "$try" = 2 ] && fail "PIDs not increasing twice: $OA ${A[*]} $OB ${B[*]}"
        kill_wait "$OA" "$OB" "${A[@]}" "${B[@]}"
        wait_used 0 0
done
kill_wait "$OA" "$OB"
scan_rc
assert_eq "$(verdict 0)" orphaned-holders "verdict"
assert_eq "$(attributed 0)" "$(sorted "${A[@]}" "${B[@]}")" "all four workers"
assert_eq "$(confidence 0)" low "PID order"
assert_eq "$(fam_of 0 "${A[0]}")" "$(csv "${A[@]}") pid-order $OA low false" "A's family: the owner just before it"
assert_eq "$(fam_of 0 "${B[0]}")" "$(csv "${B[@]}") pid-order $OB low false" "B's family: the owner just before it"
plan_rc
assert_eq "$(targets)" "" "never a default target"
kill_wait "${A[@]}" "${B[@]}"

note "10. a dead setsid job on GPU 0 beside a live job on GPU 1 whose process list NVML does not give"
sim_new --gpus 2 --memory 16384 --reserved 512
sim_run --gpu 0 --mib 1024 --workers 2 --worker-setsid
OD=$OWNER D=("${WORKERS[@]}")
sim_run --gpu 1 --mib 512 --workers 1
LIVE=("$OWNER" "${WORKERS[@]}")
kill_wait "$OD"
"$GV_BIN" sim set "$SIM" notsup=1:processes >/dev/null
scan_rc
assert_eq "$(verdict 1)" unknown "GPU 1 without a process list"
for p in "${LIVE[@]}"; do
        never_attributed "$p"
        next_step 0 | grep -qw "$p" && fail "GPU 0's next step names PID $p of the job NVML cannot list: $(next_step 0)"
done
# every process here holds GPU 1's node too, so each may be its live job: only a link by
# number names one, and the dead job's setsid workers have none (docs/verdicts.md)
never_attributed "${D[@]}"
if [ -n "${GV_IN_PIDNS:-}" ]; then # the dead PID may as well be out of sight there (as in 5.)
        assert_eq "$(verdict 0)" invisible-here "GPU 0 verdict while GPU 1 gives no process list"
else
        assert_eq "$(verdict 0)" stale-owner "GPU 0 verdict while GPU 1 gives no process list"
        finding_text 0 | grep -q "^GPU 1 gives no process list and 4 unlinked CUDA processes hold its node too: each may be that GPU's live job" ||
                fail "GPU 0's stale-owner says why no rule names its CUDA processes: $(finding_text 0)"
fi
plan_rc
assert_eq "$(targets)" "" "no default target while a GPU gives no process list"
"$GV_BIN" sim set "$SIM" notsup=none >/dev/null
# the list back: the dead job's workers are GPU 0's orphans
scan_rc
assert_eq "$(verdict 0)" orphaned-holders "GPU 0 verdict once GPU 1 gives its list"
assert_eq "$(attributed 0)" "$(sorted "${D[@]}")" "GPU 0: the dead job's workers"
kill_wait "${D[@]}" "${LIVE[@]}"

note "11. --gpu selects one GPU, --pid names a process tied to another: shown under its own GPU"
sim_new --gpus 2 --memory 16384 --reserved 512
sim_run --gpu 1 --mib 1024 --workers 2
O=$OWNER W=("${WORKERS[@]}")
kill_wait "$O"
set +e
text=$(GHOSTVRAM_SIM="$SIM" "$GV_BIN" reclaim --confirm 300ms --gpu 0 --pid "${W[0]}" </dev/null)
set -e
grep -q "tied to GPU 1 (not the one --gpu selects)" <<<"$text" || fail "the target's GPU is said: $text"
grep -A3 "tied to GPU 1" <<<"$text" | grep -q "PID ${W[0]} " || fail "the target is listed under it: $text"
grep -q "keeps the memory with it: PID ${W[1]} share" <<<"$text" || fail "the rest of its family is named: $text"
kill_wait "${W[@]}"

echo "PASS"
