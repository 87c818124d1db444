#!/usr/bin/env bash
# `ghostvram sim`: help that teaches, clear errors with exit 2 on bad input (never a crash),
# and what init, run, set and status leave behind.
. "$(dirname "$0")/lib.sh"

# expect_usage WHAT EXPECTED-TEXT ARGS...: exit 2 and the text on stderr
expect_usage() {
        local what=$1 text=$2 rc=0
        shift 2
        "$GV_BIN" "$@" >"$GV_TMP/out" 2>"$GV_TMP/err" || rc=$?
        assert_eq "$rc" 2 "$what: exit status"
        grep -qF -- "$text" "$GV_TMP/err" || fail "$what: no '$text' in: $(cat "$GV_TMP/err")"
}

note "help"
for sub in "" init run set status; do
        "$GV_BIN" sim $sub --help >"$GV_TMP/help" || fail "sim $sub --help failed"
        grep -q "Usage: ghostvram sim" "$GV_TMP/help" || fail "sim $sub --help has no usage line"
done
# (the whole text read before matching: grep -q in a pipe may quit before a long text is
# written, and the writer's SIGPIPE fails the pipeline under pipefail)
help=$("$GV_BIN" sim set --help) || fail "sim set --help failed"
grep -q "free_delay_ms_per_gib=MS" <<<"$help" || fail "set --help does not list the knobs"
grep -q "440.33.01" <<<"$help" || fail "set --help does not list the variants"
expect_usage "no subcommand" "Usage: ghostvram sim" sim
expect_usage "unknown subcommand" "unknown command 'bogus'" sim bogus

note "init"
expect_usage "init without DIR" "expected one DIR" sim init
expect_usage "init --gpus 0" "--gpus: '0' is not a number from 1 to 16" sim init "$GV_TMP/x" --gpus 0
expect_usage "init --memory junk" "--memory: 'lots' is not a size" sim init "$GV_TMP/x" --memory lots
expect_usage "init reserved >= memory" "must be less than --memory" sim init "$GV_TMP/x" --memory 1024 --reserved 2048
sim_new --gpus 3 --memory 16GiB --reserved 256
assert_eq "$(ls "$SIM/dev" | sort | tr '\n' ' ')" "nvidia-caps nvidia-uvm nvidia0 nvidia1 nvidia2 nvidiactl " "device files"
# MIG's config and monitor capabilities, root's alone (docs/simulator.md, MIG)
assert_eq "$(stat -c '%n %a' "$SIM"/dev/nvidia-caps/* | sed "s|$SIM/dev/||" | tr '\n' ' ')" \
        "nvidia-caps/nvidia-cap1 400 nvidia-caps/nvidia-cap2 400 " "MIG capability nodes"
assert_eq "$(stat -c %s "$SIM/dev/nvidia2")" 65536 "device file size"
expect_usage "init twice" "already holds a simulated host" sim init "$SIM"
q=$(query)
assert_eq "$(jq -r '.gpus | length' <<<"$q")" 3 "GPU count"
assert_eq "$(jq -r '.gpus[2].memory.total' <<<"$q")" $((16384 * MIB)) "total memory"
assert_eq "$(jq -r '.gpus[2].memory.reserved' <<<"$q")" $((256 * MIB)) "reserved memory"
assert_eq "$(jq -r '.gpus[0].memory_v1.used' <<<"$q")" $((256 * MIB)) "v1 used on an idle GPU = reserved"
assert_eq "$(grep -c 'name=NVIDIA H100 80GB HBM3 (simulated)' "$SIM/gpus")" 3 "GPU names"
assert_eq "$(grep -o 'pci=[^ ]*' "$SIM/gpus" | sort -u | wc -l)" 3 "distinct PCI bus ids"
assert_eq "$(grep -o 'uuid=GPU-[0-9a-f-]*' "$SIM/gpus" | sort -u | wc -l)" 3 "distinct UUIDs"

note "run: bad input"
expect_usage "run without --mib" "expected DIR, --gpu and --mib" sim run "$SIM" --gpu 0
expect_usage "run on a GPU that does not exist" "this simulated host has GPUs 0 to 2" sim run "$SIM" --gpu 3 --mib 1
expect_usage "run with bad --workers" "--workers: '99' is not a number from 0 to 64" sim run "$SIM" --gpu 0 --mib 1 --workers 99
expect_usage "run with bad --mig-instance" "--mig-instance: '8' is not a GPU instance from 1 to 7" sim run "$SIM" --gpu 0 --mib 1 --mig-instance 8
expect_usage "run on a non-sim dir" "is not a simulated host" sim run "$GV_TMP" --gpu 0 --mib 1
rc=0
"$GV_BIN" sim run "$SIM" --gpu 1 --mib 16200 >"$GV_TMP/out" 2>"$GV_TMP/err" || rc=$?
track $(awk '{print $2}' "$GV_TMP/out") # (only if it wrongly started)
assert_eq "$rc" 1 "out of memory: exit status"
grep -q "CUDA error: out of memory (tried to allocate 16200 MiB; GPU 1 has a total capacity of 16384 MiB of which 16128 MiB is free)" \
        "$GV_TMP/err" || fail "out of memory message: $(cat "$GV_TMP/err")"
assert_eq "$(used 1)" 0 "nothing allocated by a job that failed"

note "run: CUDA_VISIBLE_DEVICES picks the device, the job opens every visible node"
CUDA_VISIBLE_DEVICES=2,0 sim_run --gpu 0 --mib 100
assert_eq "$(listed 2)" "$OWNER" "ordinal 0 of CUDA_VISIBLE_DEVICES=2,0 is GPU 2"
nodes=$(ls -l "/proc/$OWNER/fd" | grep -o "dev/nvidia[^ ]*" | sort | tr '\n' ' ')
assert_eq "$nodes" "dev/nvidia-uvm dev/nvidia0 dev/nvidia2 dev/nvidiactl " "nodes the owner opened"
assert_eq "$(grep -c "$SIM/dev/nvidia" "/proc/$OWNER/maps")" 4 "nodes the owner mapped"

note "set: bad input is refused as a whole"
expect_usage "set without knobs" "expected DIR and at least one KEY=VALUE" sim set "$SIM"
expect_usage "unknown knob" "unknown knob 'nosuch'" sim set "$SIM" nosuch=1
expect_usage "bad value" "hidden_owner: 'maybe' is not one of on|off" sim set "$SIM" hidden_owner=maybe
expect_usage "bad GPU" "gpu_lost: no GPU 7 on this simulated host (it has 3)" sim set "$SIM" gpu_lost=7:on
expect_usage "per-GPU global knob" "driver applies to every GPU" sim set "$SIM" driver=1:current
expect_usage "bad driver" "driver: unknown variant '999'" sim set "$SIM" driver=999
expect_usage "xid without GPU" "xid_event needs a GPU" sim set "$SIM" xid_event=79
expect_usage "one bad among good" "notsup: 'memroy'" sim set "$SIM" pid_mode=host notsup=memroy
grep -q pid_mode "$SIM/knobs" && fail "a refused set must write nothing"
"$GV_BIN" sim set "$SIM" driver=470.42.01 gpu_lost=1:on uncharged_mib=0:64
assert_eq "$(query | jq -r '.driver')" "470.42.01" "driver after set"
assert_eq "$(query | jq -r '.gpus[0].memory_v1.used')" $(((256 + 64) * MIB)) "uncharged memory in v1 used"
assert_eq "$(query | jq -r '.gpus[1].memory_v1_error')" 15 "GPU lost"
"$GV_BIN" sim status "$SIM" | grep >/dev/null "LOST" || fail "status does not show the lost GPU"
"$GV_BIN" sim status "$SIM" | grep >/dev/null "driver 470.42.01 (variant 470.42.01), PIDs as host PIDs" || fail "status header"
"$GV_BIN" sim set "$SIM" gpu_lost=default driver=default
assert_eq "$(query | jq -r '.driver')" "560.35.03" "driver back to the default"
assert_eq "$(query | jq -r '.gpus[1].memory.used')" 0 "GPU 1 back"

note "status"
expect_usage "status of a non-sim dir" "is not a simulated host" sim status "$GV_TMP"
"$GV_BIN" sim status "$SIM" | grep >/dev/null "context 1: 100 MiB, alive, owner PID $OWNER (alive)" || fail "status context line"
echo PASS
