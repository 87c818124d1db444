#!/usr/bin/env bash
# Chaos, bounded: `ghostvram serve` and `ghostvram watch --reclaim` on one simulated host of 4
# GPUs for GV_CHAOS_SECONDS (default 60) while jobs start and die at random — plain workers,
# workers in sessions of their own (--setsid-workers), launchers (staying or exiting), jobs with
# work in flight (Xid 45), descriptions passed to unrelated processes (gv-simfd: pidfd_getfd and
# SCM_RIGHTS) — and the driver's faults come and go (a lost GPU, one lost with its handle, no
# process list, hidden dead owners, a growing list, a slow teardown, a call stuck holding the
# driver's API lock that is released again, then a hang on one GPU and last a hang of every
# call, which never return). Asserts:
#   - no crash: serve and watch alive to the end, no sanitizer report, both stop on SIGTERM;
#   - every scrape (/metrics, /healthz, /api/v1/scan) answered within GV_CHAOS_SCRAPE_LIMIT s
#     (default 5; serve answers from the last result "at once", t_serve_hang.sh sees < 2 s);
#   - serve's and watch's threads, descriptors and RSS bounded (figures printed);
#   - nothing signalled that the plan of that moment did not name: every process that died
#     without the test killing it was named by a heal of watch (its "signalled PID" list) after
#     the owner of its job had died; every PID a heal names is of a job whose owner was dead;
#     the bystanders (a live job, an unrelated process holding that job's description by a
#     passed descriptor, a monitor holding the nodes by its own open) all survive;
#   - every verdict right or `unknown`: at settle points (no change for 3 collections)
#     serve's /api/v1/scan against the truth the test set up.
# The random choices come from GV_CHAOS_SEED (printed first): a failure is replayed with it.
# bench/chaos.sh runs the same for longer (bench/README.md).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/serve_lib.sh"

SEED=${GV_CHAOS_SEED:-2126}
DUR=${GV_CHAOS_SECONDS:-60}
LIMIT=${GV_CHAOS_SCRAPE_LIMIT:-5}
echo "chaos: seed $SEED (GV_CHAOS_SEED), $DUR s (GV_CHAOS_SECONDS), scrape limit $LIMIT s"
RANDOM=$SEED
GV_SIMFD="$GV_BUILD/sim/gv-simfd"
SIMLIB="$GV_BUILD/sim/current/libnvidia-ml.so.1"
need_tool python3 python3
# under ASan freed memory waits in a quarantine (256 MiB by default): keep it small so that the
# memory bounds below still mean something there
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=4:thread_local_quarantine_size_kb=64"
ASAN=false
grep -q libasan <<<"$(ldd "$GV_BIN" 2>/dev/null)" && ASAN=true

# GV_CHAOS_KEEP=DIR: the test's log, serve's and watch's output, the scrapes and the samples
# are copied there at the end, pass or fail
chaos_keep() {
        [ -n "${GV_CHAOS_KEEP:-}" ] || return 0
        mkdir -p "$GV_CHAOS_KEEP"
        cp "$L" "${SERVE_OUT:-/dev/null}" "${W_OUT:-/dev/null}" "${W_ERR:-/dev/null}" "${SCRAPES:-/dev/null}" \
                "${SAMPLES:-/dev/null}" "$GV_CHAOS_KEEP/" 2>/dev/null || true
}
gv_on_exit chaos_keep
sim_new --gpus 4 --memory 16384 --reserved 512
L=$GV_TMP/chaos.log # what the test did, one line an event, with its wall time in ms
log() { echo "$(now_ms) $*" >>"$L"; }

# ---- the job registry -------------------------------------------------------------------
# job J: J_GPU, J_OWNER, J_DEAD (ms the owner was killed, "" while it lives), J_PROCS (every
# process that holds the job's description: owner, workers, takers). PROC_JOB[PID] = J;
# KILLED[PID] = 1 once the test killed it.
declare -a J_GPU J_OWNER J_DEAD J_PROCS J_LAUNCHER
declare -A PROC_JOB KILLED
NJ=0
nv_paths() { echo "$SIM/dev/nvidiactl $SIM/dev/nvidia-uvm $SIM/dev/nvidia0 $SIM/dev/nvidia1 $SIM/dev/nvidia2 $SIM/dev/nvidia3"; }

add_proc() { # JOB PID
        PROC_JOB[$2]=$1
        J_PROCS[$1]="${J_PROCS[$1]:-} $2"
        track "$2"
}

# start_job GPU MIB OPTIONS...: a job through sim run (refused jobs — out of memory, a lost
# GPU — are logged, not failures: the chaos makes them)
start_job() {
        local gpu=$1 mib=$2 out kind pid j=$NJ
        shift 2
        if ! out=$("$GV_BIN" sim run "$SIM" --gpu "$gpu" --mib "$mib" "$@" 2>&1); then
                log "refused gpu=$gpu mib=$mib $*: ${out//$'\n'/ }"
                return 0
        fi
        J_GPU[$j]=$gpu J_DEAD[$j]="" J_PROCS[$j]="" J_LAUNCHER[$j]=""
        while read -r kind pid; do
                case "$kind" in
                launcher) J_LAUNCHER[$j]=$pid; is_dead "$pid" || track "$pid" ;;
                owner) J_OWNER[$j]=$pid; add_proc "$j" "$pid" ;;
                worker) add_proc "$j" "$pid" ;;
                child) PROC_JOB[$pid]=$j; track "$pid" ;; # exec'd: holds nothing
                esac
        done <<<"$out"
        track_group "${J_LAUNCHER[$j]:-${J_OWNER[$j]}}" "${J_OWNER[$j]}"
        NJ=$((NJ + 1))
        log "start job $j gpu=$gpu mib=$mib $* procs${J_PROCS[$j]}"
}

# pass_fd JOB: an unrelated process (its own session) comes to hold the job's description,
# taken from a live process of the job by pidfd_getfd, or sent to it with SCM_RIGHTS
pass_fd() {
        local j=$1 src="" p f i rc
        for p in ${J_PROCS[$j]}; do is_dead "$p" || { src=$p; break; }; done
        [ -n "$src" ] || return 0
        f=$GV_TMP/fd.$RANDOM
        if [ $((RANDOM % 2)) = 0 ]; then
                # shellcheck disable=SC2046
                setsid "$GV_SIMFD" take "$src" $(nv_paths) >"$f" 2>&1 </dev/null &
        else
                setsid "$GV_SIMFD" recv "$f.sock" >"$f" 2>&1 </dev/null &
        fi
        p=$!
        disown "$p"
        track "$p"
        for i in $(seq 500); do
                grep -q "listening" "$f" 2>/dev/null && {
                        # shellcheck disable=SC2046
                        "$GV_SIMFD" send "$src" "$f.sock" $(nv_paths) >"$f.send" 2>&1 || true
                        break
                }
                grep -q "ready\|error" "$f" 2>/dev/null && break
                sleep 0.01
        done
        for i in $(seq 500); do
                grep -q "ready" "$f" 2>/dev/null && break
                if is_dead "$p"; then
                        rc=$(cat "$f" "$f.send" 2>/dev/null | tr '\n' ' ')
                        # the source may have died meanwhile (a heal); anything else is a failure
                        is_dead "$src" && { log "pass job $j from $src: source gone"; return 0; }
                        grep -q "^error pidfd" <<<"$rc" && skip "pidfd_getfd is not allowed here (needs ptrace rights): $rc"
                        fail "gv-simfd for job $j from $src: $rc"
                fi
                sleep 0.01
        done
        grep -q "ready" "$f" || { kill -9 "$p" 2>/dev/null || true; log "pass job $j: no ready"; return 0; }
        add_proc "$j" "$p"
        log "pass job $j from $src to $p"
}

kill_proc() { # PID...: the test ends them (logged, never counted as a heal's)
        local p
        for p in "$@"; do
                KILLED[$p]=1
                kill -9 "$p" 2>/dev/null || true
        done
        log "kill $*"
}

live_jobs() { local j; for ((j = 0; j < NJ; j++)); do [ -z "${J_DEAD[$j]}" ] && ! is_dead "${J_OWNER[$j]}" && echo "$j"; done; return 0; }
any_job_with_live_procs() {
        local j p
        for ((j = 0; j < NJ; j++)); do
                for p in ${J_PROCS[$j]}; do is_dead "$p" || { echo "$j"; break; }; done
        done
        return 0
}

# ---- faults that come and go ------------------------------------------------------------
declare -A FAULT_ON   # knob assignment -> the time (ms) it goes again
FAULTS=(gpu_lost=0:on gpu_lost=2:on gpu_lost_handle=1:on notsup=0:processes notsup=3:processes
        hidden_owner=on list_growth=2:3 free_delay_ms_per_gib=1500)
FREE_DELAY_UNTIL=0 NFAULTS=0
fault_clear_of() { # the assignment that undoes $1
        case "$1" in
        hidden_owner=*) echo hidden_owner=off ;;
        free_delay*) echo free_delay_ms_per_gib=0 ;;
        *) echo "${1%%=*}=${1#*=}" | sed 's/:[^:]*$/:default/' ;;
        esac
}
# a fault comes for 1.5 to 6 s (one at a time: while a GPU gives no process list reclaim
# ends nothing anywhere, and the heals are part of the chaos)
add_fault() {
        [ "$NFAULTS" = 0 ] || return 0
        local f=${FAULTS[$((RANDOM % ${#FAULTS[@]}))]}
        "$GV_BIN" sim set "$SIM" "$f" >/dev/null
        FAULT_ON[$f]=$(($(now_ms) + 1500 + RANDOM % 4500))
        NFAULTS=1
        log "fault on $f"
}
expire_faults() {
        local f now
        now=$(now_ms)
        [ "$NFAULTS" = 0 ] && return 0
        for f in "${!FAULT_ON[@]}"; do
                [ "$now" -ge "${FAULT_ON[$f]}" ] || continue
                "$GV_BIN" sim set "$SIM" "$(fault_clear_of "$f")" >/dev/null
                unset "FAULT_ON[$f]"
                NFAULTS=0
                [[ $f == free_delay* ]] && FREE_DELAY_UNTIL=$((now + 8000))
                log "fault off $f"
        done
        return 0
}
fault_on_gpu() { # GPU KNOB: is KNOB=GPU:… set
        local f
        [ "$NFAULTS" = 0 ] && return 1
        for f in "${!FAULT_ON[@]}"; do [[ $f == "$2=$1:"* ]] && return 0; done
        return 1
}

# ---- the bystanders: never signalled ----------------------------------------------------
start_job 3 512 --workers 1
[ "$NJ" = 1 ] || fail "the bystander job did not start: $(cat "$L")"
BYSTANDERS=(${J_PROCS[0]})
pass_fd 0
BYSTANDERS=(${J_PROCS[0]})
[ "${#BYSTANDERS[@]}" = 3 ] || fail "the bystander job's description was not passed: $(cat "$L")"
setsid bash -c 'exec 3<"$1/dev/nvidiactl" 4<"$1/dev/nvidia3"; exec -a gv-chaos-monitor sleep 100000' _ "$SIM" </dev/null >/dev/null 2>&1 &
MON=$!
disown "$MON"
track "$MON"
wait_holder "$MON" gv-chaos-monitor
BYSTANDERS+=("$MON")
note "bystanders: job 0 on GPU 3 (${J_PROCS[0]}), monitor $MON"

# a ghost a heal must end (the killed owner's workers in its group, as in t_watch_reclaim.sh):
# the check of what heals signalled is not left to chance
start_job 0 1024 --workers 2
[ "$NJ" = 2 ] || fail "the first ghost's job did not start: $(cat "$L")"
J_DEAD[1]=$(now_ms)
kill_proc "${J_OWNER[1]}"

# ---- serve, watch, the scraper, the sampler ---------------------------------------------
serve_start --interval 1s --call-timeout 1s
SERVE_ERR=$SERVE_OUT
W_OUT=$GV_TMP/watch.json
W_ERR=$GV_TMP/watch.err
GHOSTVRAM_SIM="$SIM" "$GV_BIN" watch --json --interval 1s --for 0 --reclaim --reclaim-every 15s --call-timeout 1s \
        >"$W_OUT" 2>"$W_ERR" &
WATCH_PID=$!
track "$WATCH_PID"
wait_until 30 curl -fsS -o /dev/null "$URL/healthz" || fail "/healthz never answered 200"

STOP=$GV_TMP/stop
SCRAPES=$GV_TMP/scrapes # EPOCH-MS PATH CURL-RC HTTP-CODE SECONDS
( while [ ! -e "$STOP" ]; do
        for path in /metrics /healthz /api/v1/scan; do
                t0=$(now_ms)
                r=$(curl -gsS --max-time $((LIMIT * 3)) -o /dev/null -w '%{http_code} %{time_total}' "$URL$path" 2>/dev/null) && rc=0 || rc=$?
                echo "$t0 $path $rc ${r:-000 -}"
        done
        sleep 0.2
done ) >"$SCRAPES" 2>/dev/null &
SCRAPER=$!
track "$SCRAPER"
SAMPLES=$GV_TMP/samples # EPOCH-MS WHO THREADS FDS RSS-KIB ANON-KIB
# The status file is read in one go: read(1) line by line seeks back after each line, and the
# kernel makes the text again at every seek, so a State that changed meanwhile ("S (sleeping)"
# to "R (running)") moves the later lines and one is read cut ("hreads:"). A sample missing a
# figure is left out, never written with its columns shifted.
sample_proc() { # WHO PID
        local st k v thr="" rss="" anon="" fds
        st=$(cat "/proc/$2/status" 2>/dev/null) || return 0
        while read -r k v; do
                case $k in Threads:) thr=$v ;; VmRSS:) rss=${v%% *} ;; RssAnon:) anon=${v%% *} ;; esac
        done <<<"$st"
        fds=$(ls "/proc/$2/fd" 2>/dev/null | wc -l)
        [[ $thr =~ ^[0-9]+$ && $rss =~ ^[0-9]+$ && $anon =~ ^[0-9]+$ ]] || return 0
        echo "$(now_ms) $1 $thr $fds $rss $anon"
}
( while [ ! -e "$STOP" ]; do sample_proc serve "$SERVE_PID"; sample_proc watch "$WATCH_PID"; sleep 0.5; done ) >"$SAMPLES" &
SAMPLER=$!
track "$SAMPLER"

# ---- the truth, and serve's verdicts against it ----------------------------------------
# truth_of GPU: "ghost" when a job on it lost its owner and a holder of its description
# lives in the dead owner's process group (a link by number: the verdict must be
# orphaned-holders); "ghost-weak" when the job's live holders are all outside it (a
# launcher's workers, setsid workers, unrelated processes holding a passed description):
# linked by description family or as orphans, so orphaned-holders too — unless another GPU
# gives no process list (listless_besides): every process here holds every GPU's node, so
# each may be that GPU's live job, only a link by number names it (docs/verdicts.md,
# "Description families") and the verdict is stale-owner, naming the GPU (in a PID
# namespace, where the dead PID may be out of sight, invisible-here or unattributed-live);
# else "clean"
truth_of() {
        local j p t=clean
        for ((j = 0; j < NJ; j++)); do
                [ "${J_GPU[$j]}" = "$1" ] && is_dead "${J_OWNER[$j]}" || continue
                for p in ${J_PROCS[$j]}; do
                        _gv_stat "$p" && [ "${_GV_ST[0]}" != Z ] || continue
                        [ "${_GV_ST[2]}" = "${J_OWNER[$j]}" ] && { echo ghost; return 0; }
                        t=ghost-weak
                done
        done
        echo "$t"
}
listless_besides() { # GPU: another GPU that gives no process list now (a notsup fault), or fail
        local f
        [ "$NFAULTS" = 0 ] && return 1
        for f in "${!FAULT_ON[@]}"; do
                [[ $f == notsup=*:processes && ${f#notsup=} != "$1:"* ]] && { f=${f#notsup=}; echo "${f%%:*}"; return 0; }
        done
        return 1
}
jobs_of() { # GPU: each job on it, its owner dead or alive, its processes alive
        local j p
        for ((j = 0; j < NJ; j++)); do
                [ "${J_GPU[$j]}" = "$1" ] || continue
                printf 'job %s (owner %s %s, launcher %s):' "$j" "${J_OWNER[$j]}" \
                        "$(is_dead "${J_OWNER[$j]}" && echo dead || echo alive)" "${J_LAUNCHER[$j]:--}"
                for p in ${J_PROCS[$j]}; do is_dead "$p" || printf ' %s(%s)' "$p" "$(shape_of "$p")"; done
                echo
        done
}
shape_of() { _gv_stat "$1" && echo "ppid ${_GV_ST[1]} pgid ${_GV_ST[2]} sid ${_GV_ST[3]}"; }
alive_set() { local p; for p in "${!PROC_JOB[@]}"; do is_dead "$p" || echo "$p"; done | sort | tr '\n' ' '; }
CHECKED=0 CHECK_SKIPPED=0 UNKNOWN_SEEN=0
settle_check() {
        local t0 a0 a1 g truth verdict ok i body epoch blind
        t0=$(date +%s)
        a0=$(alive_set)
        # three collections that started after the last change
        for i in $(seq 100); do
                epoch=$(curl -fsS --max-time "$LIMIT" "$URL/api/v1/scan" | jq -r '.time_epoch | floor') || epoch=0
                [ "$epoch" -ge $((t0 + 3)) ] && break
                sleep 0.3
        done
        if [ "$epoch" -lt $((t0 + 3)) ]; then
                CHECK_SKIPPED=$((CHECK_SKIPPED + 1)); log "settle: no fresh collection"; return 0
        fi
        body=$(curl -fsS --max-time "$LIMIT" "$URL/api/v1/scan") || fail "/api/v1/scan failed at a settle point"
        a1=$(alive_set)
        if [ "$a0" != "$a1" ]; then
                CHECK_SKIPPED=$((CHECK_SKIPPED + 1)); log "settle: processes died meanwhile (a heal)"; return 0
        fi
        for g in 0 1 2 3; do
                truth=$(truth_of "$g")
                verdict=$(jq -r ".gpus[] | select(.index == $g) | .verdict" <<<"$body")
                # what is right: a lost GPU says so; without a process list nothing can be judged
                if [ "$g" = "$HUNG_GPU" ]; then ok="-" # its call never returns: not inspected
                elif fault_on_gpu "$g" gpu_lost || fault_on_gpu "$g" gpu_lost_handle; then ok="gpu-lost"
                elif fault_on_gpu "$g" notsup; then ok="-"
                elif [ "$truth" = ghost ]; then ok="orphaned-holders"
                elif [ "$truth" = ghost-weak ] && blind=$(listless_besides "$g"); then
                        ok="stale-owner"
                        # in a PID namespace the dead PID may as well be out of sight: its bytes
                        # stay unattributed (docs/verdicts.md, the ledger)
                        [ -z "${GV_IN_PIDNS:-}" ] || ok="invisible-here unattributed-live"
                        [ "$verdict" != stale-owner ] ||
                                jq -e --arg e "GPU $blind gives no process list" ".gpus[] | select(.index == $g) |
                                        .findings[0].evidence | any(contains(\$e))" <<<"$body" >/dev/null ||
                                fail "GPU $g: stale-owner beside GPU $blind without a list does not say why: $(jq -c ".gpus[] | select(.index == $g) | .findings[0]" <<<"$body")"
                elif [ "$truth" = ghost-weak ]; then ok="orphaned-holders"
                else
                        ok="ok"
                        # a slow teardown in progress is right to call freeing
                        if [ -n "${FAULT_ON[free_delay_ms_per_gib=1500]:-}" ] || [ "$(now_ms)" -lt "$FREE_DELAY_UNTIL" ]; then
                                ok="ok freeing"
                        fi
                fi
                log "settle gpu=$g truth=$truth verdict=$verdict right=$ok"
                [ "$verdict" = unknown ] && { UNKNOWN_SEEN=$((UNKNOWN_SEEN + 1)); continue; }
                [[ " $ok " == *" $verdict "* ]] ||
                        fail "GPU $g: verdict '$verdict', truth '$truth' (right: $ok or unknown); seed $SEED
serve said: $(jq -c ".gpus[] | select(.index == $g) | [.findings[] | {code, summary, pids}]" <<<"$body")
the jobs on GPU $g: $(jobs_of "$g")
log: $(tail -40 "$L")"
        done
        CHECKED=$((CHECKED + 1))
}

# the driver's API lock held by a call stuck in another process, then released (it dies)
lock_episode() {
        local i
        "$GV_BIN" sim set "$SIM" hang_holds_lock=on hang=3:nvmlDeviceIsMigDeviceHandle >/dev/null
        # an ASan build's stand-in needs the ASan runtime loaded first into python
        local pre=""
        $ASAN && pre=$(${CC:-cc} -print-file-name=libasan.so)
        LD_PRELOAD=$pre ASAN_OPTIONS=detect_leaks=0 GHOSTVRAM_SIM="$SIM" python3 -c '
import ctypes, sys
l = ctypes.CDLL(sys.argv[1])
assert l.nvmlInit_v2() == 0
h = ctypes.c_void_p()
assert l.nvmlDeviceGetHandleByIndex_v2(3, ctypes.byref(h)) == 0
print("calling", flush=True)
l.nvmlDeviceIsMigDeviceHandle(h, ctypes.byref(ctypes.c_uint()))' "$SIMLIB" >"$GV_TMP/locker" 2>&1 &
        LOCKER=$!
        track "$LOCKER"
        for i in $(seq 3000); do
                grep -q calling "$GV_TMP/locker" && break
                is_dead "$LOCKER" && fail "the API-lock helper failed: $(cat "$GV_TMP/locker")"
                sleep 0.01
        done
        grep -q calling "$GV_TMP/locker" || fail "the API-lock helper did not start: $(cat "$GV_TMP/locker")"
        log "lock held by $LOCKER"
        sleep 4
        "$GV_BIN" sim set "$SIM" hang_holds_lock=off hang=none >/dev/null
        kill -9 "$LOCKER"
        wait "$LOCKER" 2>/dev/null || true
        log "lock released"
}

# ---- the run ------------------------------------------------------------------------------
START=$(date +%s)
END=$((START + DUR))
LOCK_AT=$((START + DUR * 40 / 100)) HANG1_AT=$((START + DUR * 65 / 100)) HANGALL_AT=$((START + DUR * 90 / 100))
NEXT_SETTLE=$((START + 8)) HUNG_GPU=""
CYCLES=0
SHAPES=("--workers 1" "--workers 2" "--workers 2 --setsid-workers 1" "--workers 2 --worker-setsid"
        "--workers 1 --launcher" "--workers 2 --launcher-exits" "--workers 1 --busy" "--workers 0" "--workers 1 --exec-child")
while [ "$(date +%s)" -lt "$END" ]; do
        now=$(date +%s)
        CYCLES=$((CYCLES + 1))
        if [ -n "$LOCK_AT" ] && [ "$now" -ge "$LOCK_AT" ]; then lock_episode; LOCK_AT=""; continue; fi
        if [ -n "$HANG1_AT" ] && [ "$now" -ge "$HANG1_AT" ]; then
                g=$((RANDOM % 4))
                "$GV_BIN" sim set "$SIM" "hang=$g:any" >/dev/null
                HUNG_GPU=$g
                log "fault on hang=$g:any (for good: a hung call never returns)"
                HANG1_AT=""
                continue
        fi
        if [ -n "$HANGALL_AT" ] && [ "$now" -ge "$HANGALL_AT" ]; then
                "$GV_BIN" sim set "$SIM" hang=any >/dev/null
                log "fault on hang=any (for good)"
                HANGALL_AT=""
                continue
        fi
        if [ "$now" -ge "$NEXT_SETTLE" ] && [ -n "$HANGALL_AT" ] && [ "$now" -lt $((HANGALL_AT - 6)) ]; then
                settle_check
                NEXT_SETTLE=$(($(date +%s) + 6))
                continue
        fi
        expire_faults
        r=$((RANDOM % 100))
        live=($(live_jobs))
        if [ "$r" -lt 30 ] && [ "${#live[@]}" -lt 7 ]; then
                # shellcheck disable=SC2086
                start_job $((RANDOM % 4)) $((256 * (1 + RANDOM % 4))) ${SHAPES[$((RANDOM % ${#SHAPES[@]}))]}
        elif [ "$r" -lt 45 ] && [ "${#live[@]}" -gt 1 ]; then
                j=${live[$((1 + RANDOM % (${#live[@]} - 1)))]} # never job 0, the bystanders'
                J_DEAD[$j]=$(now_ms)
                kill_proc "${J_OWNER[$j]}"
        elif [ "$r" -lt 55 ]; then
                cand=($(any_job_with_live_procs))
                j=${cand[$((RANDOM % ${#cand[@]}))]} # there is always job 0
                [ "$j" != 0 ] && pass_fd "$j"
        elif [ "$r" -lt 65 ]; then
                # a job dies whole (its processes and whoever holds its description)
                cand=($(any_job_with_live_procs))
                j=${cand[$((RANDOM % ${#cand[@]}))]}
                if [ "$j" -gt 1 ]; then # not the bystanders, not the first ghost
                        [ -n "${J_DEAD[$j]}" ] || J_DEAD[$j]=$(now_ms)
                        # shellcheck disable=SC2086
                        kill_proc ${J_PROCS[$j]}
                fi
        elif [ "$r" -lt 70 ]; then
                for ((j = NJ - 1; j > 0; j--)); do
                        [ -n "${J_LAUNCHER[$j]}" ] && ! is_dead "${J_LAUNCHER[$j]}" && { kill_proc "${J_LAUNCHER[$j]}"; break; }
                done
        elif [ "$r" -lt 85 ] && [ "$now" -ge $((START + 8)) ]; then
                add_fault # not before the first heal had its chance
        fi
        sleep "0.$((3 + RANDOM % 7))"
done
touch "$STOP"
wait "$SCRAPER" "$SAMPLER" 2>/dev/null || true
log "end"

# ---- the figures and the assertions --------------------------------------------------
# what happened before the death: the test's log until the last sample of the process
died() { # WHO ERR-FILE
        local last
        last=$(awk -v w="$1" '$2 == w { t = $1 } END { print t + 0 }' "$SAMPLES")
        fail "$1 died (seed $SEED) after $last: $(tail -20 "$2"); what the test did:
$(awk -v t="$last" '$1 <= t + 1000' "$L" | tail -25)"
}
kill -0 "$SERVE_PID" 2>/dev/null || died serve "$SERVE_ERR"
kill -0 "$WATCH_PID" 2>/dev/null || died watch "$W_ERR"
serve_thr=$(steady_threads "$SERVE_PID")
watch_thr=$(steady_threads "$WATCH_PID")
serve_hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$SERVE_PID/status")

n=$(wc -l <"$SCRAPES")
bad=$(awk -v lim="$LIMIT" '$3 != 0 || $5 == "-" || $5 + 0 > lim ||
        ($2 != "/healthz" && $4 != 200) || ($2 == "/healthz" && $4 != 200 && $4 != 503)' "$SCRAPES")
slowest=$(awk '$5 != "-" && $5 + 0 > m { m = $5 } END { printf "%.3f", m }' "$SCRAPES")
heals=$(grep -c '"event":"reclaim"' "$W_OUT" || true)
echo "chaos: $CYCLES cycles, $NJ jobs, $(grep -c ' fault on ' "$L" || true) faults set," \
     "$(grep -c ' pass job .* to ' "$L" || true) descriptions passed, $heals heals"
echo "chaos: $n scrapes, slowest $slowest s; settle checks $CHECKED (skipped $CHECK_SKIPPED, unknown verdicts $UNKNOWN_SEEN)"
[ "$CHECKED" -ge 1 ] || fail "no settle check judged the verdicts (skipped $CHECK_SKIPPED): the truth was never compared"
figures() { # WHO: threads max, descriptors max, RSS first/max/last, anonymous RSS max
        awk -v w="$1" '$2 == w { if (!n++) r0 = $5; if ($3 > t) t = $3; if ($4 > f) f = $4; if ($5 > r) r = $5; rl = $5
                                 if ($6 > a) a = $6 }
                END { printf "%d %d %d %d %d %d\n", t, f, r0, r, rl, a }' "$SAMPLES"
}
read -r s_thr s_fd s_r0 s_rmax s_rl s_anon <<<"$(figures serve)"
read -r w_thr w_fd w_r0 w_rmax w_rl w_anon <<<"$(figures watch)"
echo "chaos: serve threads max $s_thr (steady $serve_thr), descriptors max $s_fd," \
     "RSS $s_r0 -> $s_rl KiB (max $s_rmax, of it anonymous $s_anon; VmHWM $serve_hwm)"
echo "chaos: watch threads max $w_thr (steady $watch_thr), descriptors max $w_fd," \
     "RSS $w_r0 -> $w_rl KiB (max $w_rmax, of it anonymous $w_anon)"

[ -z "$bad" ] || fail "scrapes unanswered or late (limit $LIMIT s; seed $SEED): $(head -5 <<<"$bad")"
[ "$n" -ge $((DUR * 3)) ] || fail "only $n scrapes in $DUR s"
# threads: serve's own (main, collector, listener, deadline worker) plus at most one stuck call
# a GPU and one for the calls that name no GPU (docs/metrics.md); watch's fewer. Walker threads
# (up to 7, milliseconds) may be in a single look, not in steady_threads.
[ "$serve_thr" -le 9 ] || fail "serve has $serve_thr threads at rest: calls pile up in the driver"
[ "$watch_thr" -le 9 ] || fail "watch has $watch_thr threads at rest"
[ "$s_thr" -le 16 ] || fail "serve reached $s_thr threads"
[ "$s_fd" -le 24 ] || fail "serve reached $s_fd descriptors"
[ "$w_fd" -le 24 ] || fail "watch reached $w_fd descriptors"
rlimit=4096
$ASAN && rlimit=65536 # ASan's allocator and shadow keep more around
[ $((s_rl - s_r0)) -lt "$rlimit" ] || fail "serve's RSS grew $s_r0 -> $s_rl KiB (limit +$rlimit)"
[ $((w_rl - w_r0)) -lt "$rlimit" ] || fail "watch's RSS grew $w_r0 -> $w_rl KiB (limit +$rlimit)"

# nothing signalled that the plan of that moment did not name
for p in "${BYSTANDERS[@]}"; do is_dead "$p" && fail "bystander $p was ended (seed $SEED): $(grep reclaim "$W_OUT")"; done
declare -A HEALED # PIDs the heals signalled
while IFS= read -r msg; do
        for p in $(sed -n 's/.*; signalled PID \([0-9 ]*\).*/\1/p' <<<"$msg"); do HEALED[$p]=1; done
done < <(jq -r 'select(.event == "reclaim") | .message' "$W_OUT")
for p in "${!HEALED[@]}"; do
        j=${PROC_JOB[$p]:-}
        [ -n "$j" ] || fail "a heal signalled PID $p, which no job of the test had (seed $SEED)"
        [ "$j" != 0 ] || fail "a heal signalled bystander $p (seed $SEED)"
        [ -n "${J_DEAD[$j]}" ] || fail "a heal signalled PID $p of job $j, whose owner lives (seed $SEED)"
done
for p in "${!PROC_JOB[@]}"; do
        [ -z "${KILLED[$p]:-}" ] && is_dead "$p" || continue
        [ -n "${HEALED[$p]:-}" ] || fail "process $p (job ${PROC_JOB[$p]}) died, but neither the test nor a heal ended it (seed $SEED): $(grep reclaim "$W_OUT")"
done
note "  $(echo "${!HEALED[@]}" | wc -w) processes ended by heals, each of a job whose owner had died"
for p in ${J_PROCS[1]}; do
        [ "$p" = "${J_OWNER[1]}" ] || [ -n "${HEALED[$p]:-}" ] || fail "the first ghost's worker $p was not healed: $(grep reclaim "$W_OUT")"
done

for f in "$SERVE_ERR" "$W_ERR"; do
        grep -E "AddressSanitizer|LeakSanitizer|runtime error|Segmentation|Aborted" "$f" && fail "a sanitizer or crash report in $f"
done
serve_stop
# watch finishes its sample (a heal runs to its end: reclaim's --wait, 60 s at most) first
stop_within 90 "$WATCH_PID" TERM
for f in "$SERVE_ERR" "$W_ERR"; do
        grep -E "AddressSanitizer|LeakSanitizer|runtime error" "$f" && fail "a sanitizer report in $f at exit"
done
echo "PASS"
