# track_lib.sh: helpers for the tests of `ghostvram track` (source after lib.sh).
# The tracker library is preloaded into programs built with ASan in the sanitizer build; it is
# built without a sanitizer and comes first in the library list, which ASan refuses to start
# with unless told that the order is intended.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"
GV_SIMALLOC="$GV_BUILD/sim/gv-simalloc"
GV_TRACKLIB="$GV_BUILD/libghostvram-track.so"
[ -x "$GV_SIMALLOC" ] || fail "gv-simalloc is not built"
[ -f "$GV_TRACKLIB" ] || fail "libghostvram-track.so is not built"

# ghostvram track --ledger-dir $LEDGER --report $GV_TMP/report -- ghostvram sim run SIM ARGS...:
# sets OWNER, WORKERS like sim_run and tracks them.
track_sim_run() {
        local out kind pid
        out=$("$GV_BIN" track --ledger-dir "$LEDGER" --report "$GV_TMP/report" -- "$GV_BIN" sim run "$SIM" "$@") ||
                fail "track -- sim run $* failed: $(cat "$GV_TMP/report" 2>/dev/null)"
        OWNER="" WORKERS=()
        while read -r kind pid; do
                case "$kind" in
                owner) OWNER=$pid ;;
                worker) WORKERS+=("$pid") ;;
                *) fail "sim run printed '$kind $pid'" ;;
                esac
                track "$pid"
        done <<<"$out"
        [ -n "$OWNER" ] || fail "sim run printed no owner"
        track_group "$OWNER"
}

# The ledger of GPU $1 in a scan with --ledger-dir $LEDGER, as compact JSON ("null": none).
scan_ledger() {
        local doc rc=0
        doc=$(GHOSTVRAM_SIM="$SIM" "$GV_BIN" scan --json --confirm 0 --ledger-dir "$LEDGER") || rc=$?
        [ "$rc" -le 1 ] || fail "scan --ledger-dir: exit $rc"
        jq -c ".gpus[] | select(.index == $1) | .ledger" <<<"$doc"
}
