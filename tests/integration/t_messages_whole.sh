#!/usr/bin/env bash
# No message is cut (issue 21): every text, JSON and metrics output of scan, check, doctor,
# reclaim (its plan and its escalations), snapshot and serve, in situations whose messages are
# the longest (hidden owners' candidates on two GPUs, a lost GPU named by its bus id, a GPU
# that does not answer), is read by messages_whole.py: each message closes its brackets and
# backquotes and ends at a word.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/serve_lib.sh"
need_tool python3 python3
WHOLE="$(dirname "$0")/messages_whole.py"
gvs() { GHOSTVRAM_SIM="$SIM" "$GV_BIN" "$@"; }
N=0
# out KIND CMD...: CMD's stdout (its exit status does not matter here) into a file of KIND
out() { local k=$1; shift; N=$((N + 1)); set +e; "$@" >"$GV_TMP/$N.$k" 2>>"$GV_TMP/stderr.text"; set -e; }
outputs() { # every command's outputs on the simulated host as it is now
        out text gvs scan --verbose --confirm 300ms
        out json gvs scan --json --confirm 300ms
        out text gvs check --confirm 300ms -t 60
        out text gvs doctor --explain
        out json gvs doctor --json --explain
        out text gvs reclaim --confirm 300ms
        out json gvs reclaim --json --confirm 300ms
        out text gvs reclaim --reset-gpu --gpu 1 --confirm 300ms
        out json gvs reclaim --json --reset-gpu --gpu 1 --confirm 300ms
        out json gvs snapshot --json
}

sim_new --gpus 2 --memory 16384 --reserved 512
note "hidden owners: two killed jobs whose workers hold both GPUs (candidates of each ghost)"
"$GV_BIN" sim set "$SIM" hidden_owner=on
sim_run --gpu 0 --mib 2048 --workers 3
A=$OWNER
sim_run --gpu 1 --mib 1024 --workers 2
kill_wait "$A" "$OWNER"
sim_shm_large # scan's note and doctor's host-shm
outputs
grep -q "candidate: it holds 2 GPUs with a ghost)" "$GV_TMP/2.json" \
        || fail "the situation has no candidate of two GPUs: $(head -c 600 "$GV_TMP/2.json")"
serve_start --interval 1s
wait_until 20 bash -c "curl -gfsS --max-time 5 '$URL/metrics' 2>/dev/null | grep -q ghostvram_gpu_memory_used_bytes" \
        || fail "serve has no metrics"
N=$((N + 1))
scrape >"$GV_TMP/$N.prom"
serve_stop

note "a lost GPU named by its bus id (/proc/driver/nvidia/gpus), and a GPU that does not answer"
"$GV_BIN" sim set "$SIM" hidden_owner=off gpu_lost_handle=1:on
outputs
grep -q "the only GPU and the only entry left)" "$GV_TMP/$N.json" \
        || fail "the lost GPU's bus id note is not in the snapshot: $(head -c 600 "$GV_TMP/$N.json")"
"$GV_BIN" sim set "$SIM" gpu_lost_handle=1:off hang=1:nvmlDeviceGetMemoryInfo_v2
N=$((N + 1))
set +e
gvs check -t 5 >"$GV_TMP/$N.text"
gvs scan --json --call-timeout 1s >"$GV_TMP/$((N + 1)).json"
set -e
N=$((N + 1))
"$GV_BIN" sim set "$SIM" hang=none

note "every message whole"
shopt -s nullglob
python3 "$WHOLE" json "$GV_TMP"/*.json || fail "a JSON message is cut (above)"
python3 "$WHOLE" text "$GV_TMP"/*.text || fail "a text message is cut (above)"
python3 "$WHOLE" prom "$GV_TMP"/*.prom || fail "a metrics label is cut (above)"
echo "PASS"
