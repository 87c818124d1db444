#!/usr/bin/env bash
# Xid events through serve and watch: the kernel log is followed from the start, so
# ghostvram_xid_events_total counts only events that arrive while it runs (a restart never
# replays history into increase()), per Xid code; watch prints each new one.
# The simulated host's kernel log is the file $SIM/kmsg (dmesg format).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/serve_lib.sh"

sim_new --gpus 2 --memory 16384 --reserved 512
xid_line() { # SECONDS XID MESSAGE
        printf '[%s] NVRM: Xid (PCI:0000:1b:00): %s, pid=4242, name=python3, %s\n' "$1" "$2" "$3" >>"$SIM/kmsg"
}
xid_count() {
        local body
        body=$(scrape) || exit 1
        awk -v s="ghostvram_xid_events_total{xid=\"$1\"}" 'index($0, s) == 1 { v = $NF } END { print v + 0 }' <<<"$body"
}

note "history before serve starts is not counted"
xid_line 100.000001 48 "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer."
serve_start --interval 1s
wait_until 30 bash -c "curl -fsS '$URL/healthz' >/dev/null" || fail "/healthz never turned 200"
sleep 1.5
scrape >"$GV_TMP/m1.txt"
grep -q '^# TYPE ghostvram_xid_events_total counter$' "$GV_TMP/m1.txt" || fail "the Xid family is there from the start"
grep -q '^ghostvram_xid_events_total{' "$GV_TMP/m1.txt" && fail "history was counted: $(grep xid_events "$GV_TMP/m1.txt")"
grep -q '^ghostvram_scan_errors_total{source="kernel"} 0$' "$GV_TMP/m1.txt" || fail "kernel log errors"

note "new events are counted per code"
xid_line 200.000001 31 "MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_0 faulted @ 0x7f3a_12345000."
xid_line 200.500001 13 "Graphics SM Warp Exception on (GPC 1, TPC 0, SM 0): Out Of Range Address"
xid_line 201.000001 31 "MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_0 faulted @ 0x7f3a_22345000."
wait_until 20 bash -c "[ \"\$(curl -fsS '$URL/metrics' | grep -c '^ghostvram_xid_events_total{xid=\"31\"} 2$')\" = 1 ]" \
        || fail "Xid 31 count: $(scrape | grep xid_events)"
assert_eq "$(xid_count 13)" 1 "Xid 13 count"
assert_eq "$(xid_count 48)" 0 "Xid 48 (history) count"
scrape | promtool check metrics 2>/dev/null || { command -v promtool >/dev/null && fail "promtool check with Xid samples"; }
OM=$(curl -fsS -H 'Accept: application/openmetrics-text' "$URL/metrics")
grep -q '^ghostvram_xid_events_total{xid="13"} 1$' <<<"$OM" || fail "OpenMetrics Xid sample"
grep -q '^# TYPE ghostvram_xid_events counter$' <<<"$OM" || fail "OpenMetrics Xid family"
serve_stop

note "a restart does not replay the history"
serve_start --interval 1s
wait_until 30 bash -c "curl -fsS '$URL/healthz' >/dev/null" || fail "/healthz after restart"
sleep 1.5
scrape >"$GV_TMP/m2.txt"
grep -q '^ghostvram_xid_events_total{' "$GV_TMP/m2.txt" && fail "a restart replayed history: $(grep xid_events "$GV_TMP/m2.txt")"
serve_stop

note "--no-kernel: nothing followed"
serve_start --interval 1s --no-kernel
wait_until 30 bash -c "curl -fsS '$URL/healthz' >/dev/null" || fail "/healthz with --no-kernel"
xid_line 300.000001 43 "Ch 00000010"
sleep 2.5
assert_eq "$(xid_count 43)" 0 "--no-kernel counts nothing"
serve_stop

note "watch prints new Xid events (not the history)"
LOG="$GV_TMP/watch.log"
GHOSTVRAM_SIM="$SIM" "$GV_BIN" watch --interval 300ms >"$LOG" 2>&1 &
W=$!
track "$W"
wait_until 20 grep -q "GPU 0 ok" "$LOG" || fail "watch did not start: $(cat "$LOG")"
xid_line 400.000001 94 "Contained ECC error."
wait_until 20 grep -q "Xid 94 on GPU 0 (0000:1b:00.0): .*; see 'ghostvram xid explain 94'" "$LOG" || fail "no Xid line: $(cat "$LOG")"
grep -q "Xid 31\|Xid 13\|Xid 48\|Xid 43" "$LOG" && fail "watch printed history: $(cat "$LOG")"
stop_within 10 "$W" TERM
echo "PASS"
