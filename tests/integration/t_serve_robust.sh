#!/usr/bin/env bash
# `ghostvram serve` under abuse, loopback only, bounded in count and time: hundreds of
# concurrent scrapes, more clients than the connection limit, malformed, oversized and
# pipelined requests, slow and silent clients. No crash, bounded memory and threads, and
# correct answers afterwards.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/serve_lib.sh"

rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }

# raw BYTES-FILE: send it on a fresh connection, print what comes back (2 s at most)
raw() {
        timeout 3 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 0; cat "$2" >&3 2>/dev/null; timeout 2 cat <&3' _ "$PORT" "$1" || true
}

# under ASan, freed memory waits in a quarantine (256 MiB by default): keep it small so that
# the memory bound below still means something there
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=4:thread_local_quarantine_size_kb=64"
sim_new --gpus 2 --memory 16384 --reserved 512
sim_run --gpu 1 --mib 1024 --workers 1
kill_wait "$OWNER"
serve_start --interval 1s --max-connections 512
wait_until 30 bash -c "[ \"\$(curl -fsS '$URL/metrics' | grep -c 'ghost_confirmed{gpu=\"1\".*} 1')\" = 1 ]" || fail "no confirmed ghost"
want=$(ghost_of 1)
assert_eq "$want" $((1024 * MIB)) "ghost before the storm"
sleep 1
rss0=$(rss_kib "$SERVE_PID")
thr0=$(steady_threads "$SERVE_PID")

note "300 concurrent scrapes (limit 512): every one complete and 200"
seq 300 | xargs -P 300 -I{} curl -sS --max-time 20 -o /dev/null -w '%{http_code} %{size_download}\n' "$URL/metrics" \
        >"$GV_TMP/storm.txt" 2>&1 || true
ok=$(awk '$1 == 200 && $2 > 5000' "$GV_TMP/storm.txt" | wc -l)
assert_eq "$ok" 300 "complete 200 answers ($(sort "$GV_TMP/storm.txt" | uniq -c | sort -rn | head -3 | tr '\n' ';'))"
kill -0 "$SERVE_PID" || fail "serve died in the storm"

note "malformed, oversized and pipelined requests"
printf 'GARBAGE\r\n\r\n' >"$GV_TMP/r1"
printf 'GET /metrics HTTP/9.9\r\nHost: x\r\n\r\n' >"$GV_TMP/r2"
printf 'GET /metrics HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n' >"$GV_TMP/r3"
{ printf 'GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: '; head -c 1048576 /dev/zero | tr '\0' a; printf '\r\n\r\n'; } >"$GV_TMP/r4"
{ printf 'GET /'; head -c 1048576 /dev/zero | tr '\0' p; printf ' HTTP/1.1\r\nHost: x\r\n\r\n'; } >"$GV_TMP/r5"
printf 'GET /met\0rics HTTP/1.1\r\nHost: x\r\n\r\n' >"$GV_TMP/r6"
{ printf 'POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 1073741824\r\n\r\n'; head -c 65536 /dev/zero; } >"$GV_TMP/r7"
printf 'GET /metrics HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n' >"$GV_TMP/r8"
for i in $(seq 50); do printf 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n'; done >"$GV_TMP/r9"
for i in $(seq 1 9); do
        raw "$GV_TMP/r$i" >"$GV_TMP/a$i" 2>/dev/null
        first=$(head -1 "$GV_TMP/a$i" | tr -d '\r')
        case $i in
        4 | 5) [[ -z "$first" || "$first" == "HTTP/1.1 4"* ]] || fail "oversized request $i: '$first'" ;;
        7) [[ "$first" == "HTTP/1.1 405"* ]] || fail "POST with a huge body: '$first'" ;;
        9) n=$(grep -c '^HTTP/1.1 200' "$GV_TMP/a$i")
           [ "$n" -eq 50 ] || fail "pipelined requests: $n answers of 50" ;;
        *) [[ -z "$first" || "$first" == "HTTP/1.1 "* ]] || fail "request $i: '$first'" ;;
        esac
        grep -q "^HTTP/1.1 200" "$GV_TMP/a$i" && [ "$i" -ne 8 ] && [ "$i" -ne 9 ] && fail "request $i was answered 200"
        kill -0 "$SERVE_PID" || fail "serve died on request $i"
done

note "slow and silent clients do not block scrapes"
pids=()
for i in $(seq 60); do
        # a client that trickles a request one byte every 0.3 s, and one that says nothing
        ( exec 3<>"/dev/tcp/127.0.0.1/$PORT" || exit 0
          for c in G E T ' ' /; do printf '%s' "$c" >&3 2>/dev/null || exit 0; sleep 0.3; done; sleep 3 ) &
        pids+=($!)
        ( exec 3<>"/dev/tcp/127.0.0.1/$PORT" || exit 0; sleep 4 ) &
        pids+=($!)
done
track "${pids[@]}"
sleep 0.5
# each at once: under 2 s on a loaded machine (a scrape queued behind the slow clients would
# wait for them, 4 s and more)
for i in $(seq 10); do
        t=$(curl -fsS --max-time 5 -o /dev/null -w '%{time_total}' "$URL/metrics") || fail "a scrape failed beside slow clients"
        awk -v t="$t" 'BEGIN { exit !(t < 2) }' || fail "a scrape took $t s beside slow clients"
done
for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
wait "${pids[@]}" 2>/dev/null || true

note "more clients than the limit: refused or served, never a crash"
serve_pid_big=$SERVE_PID url_big=$URL
SIM_SAVE=$SIM
serve_start --interval 1s --max-connections 8
seq 200 | xargs -P 200 -I{} curl -sS --max-time 10 -o /dev/null -w '%{http_code}\n' "$URL/metrics" >"$GV_TMP/over.txt" 2>/dev/null || true
kill -0 "$SERVE_PID" || fail "serve with 8 connections died under 200 clients"
served=$(grep -c '^200$' "$GV_TMP/over.txt" || true)
note "  $served of 200 served with --max-connections 8"
[ "$served" -ge 1 ] || fail "nothing served"
wait_until 10 curl -fsS -o /dev/null "$URL/metrics" || fail "no answer after the overload"
serve_stop
SERVE_PID=$serve_pid_big URL=$url_big

note "afterwards: correct answers, bounded memory and threads"
assert_eq "$(ghost_of 1)" "$want" "ghost after the abuse"
scrape | promtool check metrics || fail "promtool check after the abuse"
rss1=$(rss_kib "$SERVE_PID")
thr1=$(steady_threads "$SERVE_PID")
note "  RSS $rss0 -> $rss1 KiB, threads $thr0 -> $thr1"
limit=16384
grep -q libasan "/proc/$SERVE_PID/maps" && limit=65536       # ASan's allocator keeps more around
[ $((rss1 - rss0)) -lt "$limit" ] || fail "RSS grew by $((rss1 - rss0)) KiB (limit $limit)"
[ "$thr1" -le $((thr0 + 2)) ] || fail "threads grew from $thr0 to $thr1"
serve_stop
echo "PASS"
