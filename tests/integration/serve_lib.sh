# serve_lib.sh: helpers for the check/watch/serve integration tests (source after lib.sh).

# wait_until SECONDS CMD...: run CMD every 0.2 s until it succeeds; 1 if it never did.
wait_until() {
        local end=$((SECONDS + $1))
        shift
        until "$@"; do
                [ "$SECONDS" -lt "$end" ] || return 1
                sleep 0.2
        done
}

# stop_within SECONDS PID SIGNAL: send SIGNAL, the process must be gone within SECONDS and
# have exited 0 (it must be a child of this shell).
stop_within() {
        local i rc=0
        kill "-$3" "$2"
        for i in $(seq $(($1 * 10))); do kill -0 "$2" 2>/dev/null || break; sleep 0.1; done
        kill -0 "$2" 2>/dev/null && fail "process $2 did not stop within $1 s of SIG$3"
        wait "$2" || rc=$?
        assert_eq "$rc" 0 "exit status after SIG$3"
}

# serve_start ARGS...: `ghostvram serve` on the simulated host, listening on $SERVE_LISTEN
# (default 127.0.0.1:0: port 0, the kernel picks a free one and serve prints it). Sets
# SERVE_PID, SERVE_OUT, PORT, URL.
serve_start() {
        SERVE_OUT="$GV_TMP/serve.$RANDOM.out"
        GHOSTVRAM_SIM="$SIM" "$GV_BIN" serve --listen "${SERVE_LISTEN:-127.0.0.1:0}" "$@" >"$SERVE_OUT" 2>&1 &
        SERVE_PID=$!
        track "$SERVE_PID"
        wait_for_line "$SERVE_OUT" "listening on"
        URL=$(sed -n 's|.*listening on \(http://.*\):\([0-9]*\)/metrics.*|\1:\2|p' "$SERVE_OUT")
        PORT=${URL##*:}
        [ -n "$PORT" ] || fail "serve printed no port: $(cat "$SERVE_OUT")"
}

# serve_stop: SIGTERM, then it must exit 0 within 15 s.
serve_stop() { stop_within 15 "$SERVE_PID" TERM; }

# scrape [CURL-ARGS]: the body of /metrics (a failed scrape fails the test, with a message)
scrape() { curl -gfsS --max-time 10 "$URL/metrics" "$@" || fail "scrape of $URL/metrics failed (curl $?)"; }

# metric SELECTOR: the value of the first sample line that starts with SELECTOR ("" if none).
metric() {
        local body
        body=$(scrape) || exit 1
        awk -v s="$1" 'index($0, s) == 1 && v == "" { v = $NF } END { print v }' <<<"$body"
}

# The value of the ghost kind of GPU $1.
ghost_of() {
        local body
        body=$(scrape) || exit 1
        awk -v g="gpu=\"$1\"" 'index($0, "ghostvram_gpu_memory_used_bytes{") == 1 && index($0, g) &&
                                         index($0, "kind=\"ghost\"") && v == "" { v = $NF } END { print v }' <<<"$body"
}

# steady_threads PID: the process's thread count between its holder walks: the fewest of 20
# looks over 2 s. A walk of 64 processes or more runs on up to 7 more threads for a few
# milliseconds (host_scan.c's walkers, unnamed: the comm of the process, so not to be told
# apart by name); a count taken during one would be off by them. Threads that stay (calls
# stuck in a hung driver) are in every look.
steady_threads() {
        local i k v n min=""
        for i in $(seq 20); do
                n=""
                # in one read: line by line, the kernel makes the text again at each seek back
                # and a line moved by a changed State is read cut (t_serve_chaos.sh, sample_proc)
                while read -r k v; do [ "$k" = Threads: ] && n=$v; done <<<"$(cat "/proc/$1/status" 2>/dev/null)"
                [ -n "$n" ] || fail "no thread count for process $1"
                if [ -z "$min" ] || [ "$n" -lt "$min" ]; then min=$n; fi
                sleep 0.1
        done
        echo "$min"
}

# free_port: a loopback TCP port nobody listens on (for programs that cannot take port 0).
free_port() {
        local p i
        for i in $(seq 50); do
                p=$((20000 + RANDOM % 30000))
                (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return 0; }
        done
        fail "no free port found"
}

# A job run through a link named $1 (hostile names): sets OWNER and WORKERS like sim_run.
# The link lies in a directory named token=hunter2, a "secret" in the command line that must
# never be exported.
sim_run_named() {
        local name=$1
        shift
        mkdir -p "$GV_TMP/token=hunter2"
        ln -sf "$GV_BUILD/sim/gv-simcuda" "$GV_TMP/token=hunter2/$name"
        local report="$GV_TMP/report.$RANDOM"
        setsid "$GV_TMP/token=hunter2/$name" --dir "$SIM" "$@" --report-fd 3 3>"$report" </dev/null >/dev/null 2>&1 &
        track $!
        wait_for_line "$report" ready
        OWNER=$(awk '$1 == "owner" { print $2 }' "$report")
        mapfile -t WORKERS < <(awk '$1 == "worker" { print $2 }' "$report")
        track "$OWNER" "${WORKERS[@]}"
        track_group "$OWNER"
}
