#!/usr/bin/env bash
# snapshot on the simulated driver with real processes: what NVML says and who holds the nodes,
# for each lifetime semantic (inherited descriptors, mappings only, exec'd child, stale PID).
. "$(dirname "$0")/lib.sh"

snap() { GHOSTVRAM_SIM="$SIM" "$GV_BIN" snapshot --json "$@"; }
# The simulator's teardown watchers (one per context) stand for the driver, which is no process:
# they hold no descriptor of nvidiactl (by any path), so no holder walk names them and the
# holder sets compared here are the jobs' processes alone.
watchers() { grep -o ' watcher=[0-9]*' "$SIM/contexts" 2>/dev/null | cut -d= -f2 | paste -sd, -; }
job_holders='[.holders[].pid] | sort | map(tostring) | join(" ")'
holder_pids() { snap | jq -r "$job_holders"; }
sorted() { printf '%s\n' "$@" | sort -n | tr '\n' ' ' | sed 's/ $//'; }

sim_new --gpus 2 --memory 16384 --reserved 512

note "a job with two workers: owner listed with its bytes, all three hold every node by fd and mmap"
sim_run --gpu 1 --mib 1024 --workers 2
s=$(snap)
assert_eq "$(jq -r '.schema_version' <<<"$s")" 2 "schema_version"
assert_eq "$(jq -r '.simulated' <<<"$s")" true "simulated flag"
assert_eq "$(jq -r '.gpus[1].memory.used_bytes' <<<"$s")" $((1024 * MIB)) "GPU 1 used"
assert_eq "$(jq -r '.gpus[1].memory.reserved_bytes' <<<"$s")" $((512 * MIB)) "GPU 1 reserved"
assert_eq "$(jq -r '.gpus[1].memory.total_bytes - .gpus[1].memory.reserved_bytes - .gpus[1].memory.used_bytes - .gpus[1].memory.free_bytes' <<<"$s")" 0 "total = reserved + used + free"
assert_eq "$(jq -r '.gpus[0].memory.used_bytes' <<<"$s")" 0 "GPU 0 used"
assert_eq "$(jq -r '.gpus[1].nvml_processes | map(.pid) | join(",")' <<<"$s")" "$OWNER" "listed PIDs"
assert_eq "$(jq -r '.gpus[1].nvml_processes[0].used_bytes' <<<"$s")" $((1024 * MIB)) "owner bytes"
assert_eq "$(jq -r '.gpus[1].nvml_processes[0].host | "\(.present) \(.zombie) \(.holds_nodes)"' <<<"$s")" "true false true" "owner host facts"
assert_eq "$(jq -r "$job_holders" <<<"$s")" "$(sorted "$OWNER" "${WORKERS[@]}")" "holders"
[ -n "$(watchers)" ] || fail "no teardown watcher recorded"
for w in $(watchers | tr , ' '); do
        assert_eq "$(jq -r "[.holders[] | select(.pid == $w)] | length" <<<"$s")" 0 "teardown watcher $w is no holder"
done
for p in "$OWNER" "${WORKERS[@]}"; do
        assert_eq "$(jq -r ".holders[] | select(.pid == $p) | .devices | sort | join(\",\")" <<<"$s")" \
                "nvidia-uvm,nvidia0,nvidia1,nvidiactl" "nodes of $p"
        assert_eq "$(jq -r ".holders[] | select(.pid == $p) | .via.nvidiactl | join(\",\")" <<<"$s")" "fd,mmap" "via of $p"
        assert_eq "$(jq -r ".holders[] | select(.pid == $p) | .pgid" <<<"$s")" "$OWNER" "pgid of $p"
done
text=$(GHOSTVRAM_SIM="$SIM" "$GV_BIN" snapshot)
grep -q "SIMULATED HOST" <<<"$text" || fail "text output does not say it is simulated"
grep -q "NVML lists PID $OWNER" <<<"$text" || fail "text output does not show the listed PID"

note "kill -9 of the owner: the stale PID stays listed with its bytes, the workers hold the nodes"
kill_wait "$OWNER"
s=$(snap)
assert_eq "$(jq -r '.gpus[1].memory.used_bytes' <<<"$s")" $((1024 * MIB)) "used after kill"
assert_eq "$(jq -r '.gpus[1].nvml_processes | map(.pid) | join(",")' <<<"$s")" "$OWNER" "stale PID listed"
# gone, or a zombie until its parent reaps it: not alive either way
assert_eq "$(jq -r '.gpus[1].nvml_processes[0].host | (.present == false or .zombie == true)' <<<"$s")" true "stale PID not alive"
assert_eq "$(holder_pids)" "$(sorted "${WORKERS[@]}")" "holders after kill"
kill_wait "${WORKERS[@]}"
assert_eq "$(snap | jq -r '.gpus[1].memory.used_bytes')" 0 "used once every holder is gone"
assert_eq "$(snap | jq -r '.gpus[1].nvml_processes | length')" 0 "list empty once freed"

note "workers that closed their descriptors keep the context through their mappings alone"
sim_run --gpu 0 --mib 512 --workers 1 --close-fds-in-workers
kill_wait "$OWNER"
s=$(snap)
assert_eq "$(jq -r '.gpus[0].memory.used_bytes' <<<"$s")" $((512 * MIB)) "used via mappings"
assert_eq "$(holder_pids)" "${WORKERS[0]}" "mapping-only holder found"
assert_eq "$(jq -r ".holders[] | select(.pid == ${WORKERS[0]}) | .via.nvidiactl | join(\",\")" <<<"$s")" "mmap" "held by mmap only"
kill_wait "${WORKERS[@]}"

note "an exec'd child holds nothing (close-on-exec), and keeps nothing alive"
sim_run --gpu 0 --mib 256 --exec-child
[ -n "$CHILD" ] || fail "sim run --exec-child printed no child"
assert_eq "$(holder_pids)" "$OWNER" "only the owner holds nodes"
kill_wait "$OWNER"
assert_eq "$(snap | jq -r '.gpus[0].memory.used_bytes')" 0 "child kept nothing"
is_dead "$CHILD" && fail "the exec'd child should still run"

note "bundle: --save-bundle then --from-bundle reproduce the same facts"
sim_run --gpu 1 --mib 768 --workers 1
kill_wait "$OWNER"
GHOSTVRAM_SIM="$SIM" "$GV_BIN" snapshot --json --save-bundle "$GV_TMP/b" > "$GV_TMP/live.json"
"$GV_BIN" snapshot --json --from-bundle "$GV_TMP/b" > "$GV_TMP/bundle.json"
pick='{gpus: [.gpus[] | {index, memory, nvml_processes}], holders: [.holders[] | {pid, devices, via, pgid, state, comm}]}'
assert_eq "$(jq -c "$pick" "$GV_TMP/bundle.json")" "$(jq -c "$pick" "$GV_TMP/live.json")" "bundle reproduces the snapshot"
# pin the values as well: the same wrong answer twice would compare equal
for f in "$GV_TMP/live.json" "$GV_TMP/bundle.json"; do
        assert_eq "$(jq -r '.gpus[1].memory.used_bytes' "$f")" $((768 * MIB)) "used bytes of GPU 1 ($f)"
        assert_eq "$(jq -r '[.gpus[1].nvml_processes[].pid] | join(",")' "$f")" "$OWNER" "the dead owner still listed ($f)"
        assert_eq "$(jq -r "[.holders[] | select(.pid == ${WORKERS[0]}) | .devices[]] | sort | join(\",\")" "$f")" \
                "nvidia-uvm,nvidia0,nvidia1,nvidiactl" "the worker's device nodes (CUDA opens every visible GPU's) ($f)"
        assert_eq "$(jq -r ".holders[] | select(.pid == ${WORKERS[0]}) | .pgid" "$f")" "$OWNER" "the worker's process group ($f)"
done
assert_eq "$(jq -r '.from_bundle' "$GV_TMP/bundle.json")" true "from_bundle flag"
echo "PASS"
