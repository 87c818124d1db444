#!/usr/bin/env bash
# Process shapes of real jobs through `ghostvram sim run`: workers that start their own
# session, a launcher (torchrun, a shell script) that leads the group and holds nothing, and a
# launcher that has exited (the owner reparented, the workers' group without a leader). The
# context's lifetime is the same rule in every shape: its open file description.
. "$(dirname "$0")/lib.sh"

sid_of() { ps -o sid= -p "$1" | tr -d ' '; }
pgid_of() { ps -o pgid= -p "$1" | tr -d ' '; }
ppid_of() { ps -o ppid= -p "$1" | tr -d ' '; }

sim_new --gpus 2

note "--worker-setsid: each worker leads its own session and group, and still holds the context"
sim_run --gpu 0 --mib 1024 --workers 2 --worker-setsid
assert_eq "$LAUNCHER" "" "no launcher"
assert_eq "$(sid_of "$OWNER")" "$OWNER" "the owner leads its session"
for w in "${WORKERS[@]}"; do
        assert_eq "$(sid_of "$w")" "$w" "worker $w's session"
        assert_eq "$(pgid_of "$w")" "$w" "worker $w's group"
        assert_eq "$(ppid_of "$w")" "$OWNER" "worker $w's parent"
        holds_fd "$w" || fail "worker $w should hold the inherited descriptors"
done
kill -9 -- "-$OWNER" # the job's group: the workers are not in it
kill_wait "$OWNER"
for w in "${WORKERS[@]}"; do is_dead "$w" && fail "worker $w died with the owner's group"; done
assert_eq "$(used 0)" $((1024 * MIB)) "used: the setsid workers keep the context"
assert_eq "$(listed 0)" "$OWNER" "the dead owner listed"
kill_wait "${WORKERS[@]}"
assert_eq "$(used 0)" 0 "used after the workers"

note "--launcher: 'launcher PID' comes first, then 'owner PID'"
out=$("$GV_BIN" sim run "$SIM" --gpu 1 --mib 64 --launcher)
l1=$(sed -n 1p <<<"$out") l2=$(sed -n 2p <<<"$out")
[[ "$l1" == "launcher "* && "$l2" == "owner "* ]] || fail "sim run --launcher printed: $out"
track_group "${l1#launcher }" "${l2#owner }"
track "${l1#launcher }" "${l2#owner }"
kill -9 -- "-${l1#launcher }"
kill_wait "${l1#launcher }" "${l2#owner }"

note "--launcher: the launcher leads session and group, holds nothing; owner and workers in its group"
sim_run --gpu 1 --mib 512 --workers 2 --launcher
[ -n "$LAUNCHER" ] || fail "sim run printed no launcher"
assert_eq "$(cat "/proc/$LAUNCHER/comm")" gv-simlauncher "the launcher's name"
assert_eq "$(sid_of "$LAUNCHER")" "$LAUNCHER" "the launcher leads its session"
assert_eq "$(pgid_of "$LAUNCHER")" "$LAUNCHER" "the launcher leads its group"
assert_eq "$(ppid_of "$OWNER")" "$LAUNCHER" "the owner's parent"
assert_eq "$(sid_of "$OWNER")" "$LAUNCHER" "the owner's session"
assert_eq "$(pgid_of "$OWNER")" "$LAUNCHER" "the owner's group: it leads none"
for w in "${WORKERS[@]}"; do
        assert_eq "$(pgid_of "$w")" "$LAUNCHER" "worker $w's group"
        assert_eq "$(ppid_of "$w")" "$OWNER" "worker $w's parent"
done
holds_fd "$LAUNCHER" && fail "the launcher holds a device descriptor"
holds_map "$LAUNCHER" && fail "the launcher maps a device file"
assert_eq "$(listed 1)" "$OWNER" "listed: the owner, not the launcher"
note "kill -9 the owner: the launcher reaps it and exits like a shell; the workers keep the context"
kill_wait "$OWNER"
for i in $(seq 500); do is_dead "$LAUNCHER" && break; sleep 0.01; done
is_dead "$LAUNCHER" || fail "the launcher did not exit after its child"
[ -e "/proc/$OWNER" ] && fail "the owner was not reaped by the launcher"
assert_eq "$(used 1)" $((512 * MIB)) "used: the workers keep the context"
assert_eq "$(listed 1)" "$OWNER" "the dead owner listed"
kill -9 -- "-$LAUNCHER" # the group outlives its leader: it still names the workers
for w in "${WORKERS[@]}"; do for i in $(seq 500); do is_dead "$w" && break; sleep 0.01; done; done
for w in "${WORKERS[@]}"; do is_dead "$w" || fail "worker $w survived kill -- -LAUNCHER"; done

note "--launcher-exits: sim run returns with the launcher gone and the owner reparented"
sim_run --gpu 0 --mib 256 --workers 2 --launcher-exits
[ -n "$LAUNCHER" ] || fail "sim run printed no launcher"
is_dead "$LAUNCHER" || fail "the launcher is still running"
[ -e "/proc/$LAUNCHER" ] && fail "the launcher was not reaped"
[ "$(ppid_of "$OWNER")" = "$LAUNCHER" ] && fail "the owner still names the launcher as parent"
assert_eq "$(pgid_of "$OWNER")" "$LAUNCHER" "the owner's group: the exited launcher's"
assert_eq "$(sid_of "$OWNER")" "$LAUNCHER" "the owner's session"
for w in "${WORKERS[@]}"; do
        assert_eq "$(ppid_of "$w")" "$OWNER" "worker $w's parent"
        assert_eq "$(pgid_of "$w")" "$LAUNCHER" "worker $w's group (its leader is gone)"
done
assert_eq "$(listed 0)" "$OWNER" "listed"
assert_eq "$(used 0)" $((256 * MIB)) "used"
kill_wait "$OWNER"
assert_eq "$(used 0)" $((256 * MIB)) "used: the workers keep the context"
kill -9 -- "-$LAUNCHER"
for w in "${WORKERS[@]}"; do for i in $(seq 500); do is_dead "$w" && break; sleep 0.01; done; done
assert_eq "$(used 0)" 0 "used after the group is killed"

note "CUDA_VISIBLE_DEVICES passes through sim run (and the launcher): ordinal 0 is GPU 1"
CUDA_VISIBLE_DEVICES=1 sim_run --gpu 0 --mib 128 --launcher --workers 1 --worker-setsid
assert_eq "$(used 1)" $((128 * MIB)) "used on GPU 1"
assert_eq "$(used 0)" 0 "used on GPU 0"
ls -l "/proc/$OWNER/fd" | grep -q "$SIM/dev/nvidia0" && fail "the owner opened nvidia0 with CUDA_VISIBLE_DEVICES=1"
ls -l "/proc/$OWNER/fd" | grep -q "$SIM/dev/nvidia1" || fail "the owner did not open nvidia1"
note "a launcher whose job fails (out of memory): exit 1, CUDA's message, nothing left running"
set +e
err=$("$GV_BIN" sim run "$SIM" --gpu 0 --mib 100000 --workers 1 --launcher 2>&1 >/dev/null)
rc=$?
set -e
assert_eq "$rc" 1 "exit status"
grep -q "CUDA error: out of memory" <<<"$err" || fail "message: $err"
# processes whose command line names the failed job (cmdline is NUL-separated)
job_procs() {
        local f
        for f in /proc/[0-9]*/cmdline; do
                tr '\0' ' ' 2>/dev/null <"$f" | grep -q -- "--dir $SIM --gpu 0 --mib $1 " && echo "${f%/cmdline}"
        done
        true
}
sim_run --gpu 0 --mib 32 --launcher
[ "$(job_procs 32 | wc -l)" = 2 ] || fail "job_procs finds $(job_procs 32 | wc -l) processes of a live launcher job, not 2"
for i in $(seq 100); do
        left=$(job_procs 100000)
        [ -z "$left" ] && break
        sleep 0.02
done
[ -z "$left" ] || fail "processes of the failed job still run: $left"
echo PASS
