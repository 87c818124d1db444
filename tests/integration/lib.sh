# lib.sh: helpers for the integration tests (source it). They drive the real binary against
# the simulated driver with real processes, and kill every process they started on EXIT,
# pass or fail. Environment (from ctest): GV_BIN, GV_BUILD, GV_SRC.
set -euo pipefail

: "${GV_BIN:?GV_BIN must name the ghostvram binary}"
: "${GV_BUILD:?GV_BUILD must name the build directory}"
GV_QUERY="$GV_BUILD/sim/gv-simquery"
GV_TMP=$(mktemp -d /tmp/gv-it.XXXXXX)
GV_PIDS=()      # every process started (killed with SIGKILL on exit)
GV_GROUPS=()    # process groups of jobs (each owner, or its launcher, leads its own)
MIB=1048576

gv_cleanup() {
        local rc=$?
        local p f
        for p in "${GV_GROUPS[@]}"; do kill -9 -- "-$p" 2>/dev/null || true; done
        for p in "${GV_PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
        # teardown watchers (sessions of their own) of contexts something untracked still holds;
        # a PID recorded in another PID namespace may name another process here: only one
        # that watches a directory of ours is killed
        for f in "$GV_TMP"/*/contexts; do
                [ -f "$f" ] || continue
                for p in $(grep -o ' watcher=[0-9]*' "$f" | cut -d= -f2); do
                        tr '\0' ' ' 2>/dev/null <"/proc/$p/cmdline" | grep -q -- "--dir $GV_TMP/" &&
                                kill -9 "$p" 2>/dev/null || true
                done
        done
        rm -rf "$GV_TMP"
        exit "$rc"
}
trap gv_cleanup EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
# A restriction of this environment that no package lifts (PID namespaces or ptrace denied, no
# writable cgroup): skipped (77) on a developer's machine; in CI (CI set), where the project's
# own scripts prepare the machine, a failure — a skip there would pass silently.
skip() {
        if [ -n "${CI:-}" ] && [ "${CI}" != false ]; then fail "cannot run here: $* (CI=$CI: a failure, not a skip)"; fi
        echo "SKIP: $*"
        exit 77
}
# A tool the project installs itself (scripts/install-deps --test): missing is a failure, always.
need_tool() { # COMMAND DEBIAN-PACKAGE
        command -v "$1" >/dev/null || fail "$1 is not installed (Debian package $2): run scripts/install-deps --test"
}
note() { echo "--- $*"; }

assert_eq() { # ACTUAL EXPECTED WHAT
        [ "$1" = "$2" ] || fail "$3: got '$1', expected '$2'"
}

# Remember processes to kill on exit.
track() { GV_PIDS+=("$@"); }

# A fresh simulated host; sets SIM.
sim_new() {
        SIM="$GV_TMP/sim.$RANDOM"
        "$GV_BIN" sim init "$SIM" "$@" >/dev/null
}

# ghostvram sim run SIM ARGS...: sets LAUNCHER ("" without --launcher/--launcher-exits),
# OWNER, WORKERS (array), CHILD and tracks them all (a launcher that already exited is not
# tracked: its PID may be reused). The job's process group — the launcher's when there is
# one, else the owner's — is killed on exit.
sim_run() {
        local out line
        out=$("$GV_BIN" sim run "$SIM" "$@") || fail "sim run $* failed"
        LAUNCHER="" OWNER="" CHILD="" WORKERS=()
        while read -r kind pid; do
                case "$kind" in
                launcher) LAUNCHER=$pid ;;
                owner) OWNER=$pid ;;
                worker) WORKERS+=("$pid") ;;
                child) CHILD=$pid ;;
                *) fail "sim run printed '$kind $pid'" ;;
                esac
                [ "$kind" = launcher ] && is_dead "$pid" && continue
                track "$pid"
        done <<<"$out"
        [ -n "$OWNER" ] || fail "sim run printed no owner"
        GV_GROUPS+=("${LAUNCHER:-$OWNER}")
}

# Field KEY of context ID in SIM's contexts ("" when the context is not there).
ctx_field() { grep "^ctx=$1 " "$SIM/contexts" | grep -o " $2=[^ ]*" | cut -d= -f2 || true; }

# Milliseconds of the wall clock (the simulator's CLOCK_REALTIME).
now_ms() { date +%s%3N; }

# What NVML says, as JSON (gv-simquery); extra arguments go to it.
query() { GHOSTVRAM_SIM="$SIM" "$GV_QUERY" "$@"; }

# used memory (v2) of GPU $1, in bytes
used() { query | jq -r ".gpus[] | select(.index == $1) | .memory.used"; }

# listed PIDs of GPU $1, space-separated, sorted ("" when none)
listed() { query | jq -r "[.gpus[] | select(.index == $1) | .procs[].pid] | sort | map(tostring) | join(\" \")"; }

# bytes listed for PID $2 on GPU $1
listed_bytes() { query | jq -r ".gpus[] | select(.index == $1) | .procs[] | select(.pid == $2) | .bytes"; }

# Is the process gone (or a zombie, which holds no files)?
is_dead() {
        local st
        st=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
        st=${st##*) }
        [ "${st%% *}" = Z ]
}

# kill -9 each PID and wait until it is dead.
kill_wait() {
        local p i
        for p in "$@"; do kill -9 "$p" 2>/dev/null || true; done
        for p in "$@"; do
                for i in $(seq 500); do is_dead "$p" && break; sleep 0.01; done
                is_dead "$p" || fail "process $p did not die"
        done
}

# Does process $1 hold a simulated device file by descriptor / by mapping?
holds_fd() { ls -l "/proc/$1/fd" 2>/dev/null | grep -q "$SIM/dev/nvidia"; }
holds_map() { grep -q "$SIM/dev/nvidia" "/proc/$1/maps" 2>/dev/null; }

# Can we make PID namespaces here?
need_unshare() {
        unshare --pid --fork --mount-proc true 2>/dev/null || skip "unshare --pid --fork --mount-proc is not allowed here"
}

# The PID, in our namespace, of the process that is $2 in the PID namespace of process $1.
pid_in_ns_of() {
        local ns st p
        ns=$(readlink "/proc/$1/ns/pid")
        for st in /proc/[0-9]*/status; do
                p=${st#/proc/}
                p=${p%/status}
                [ "$(readlink "/proc/$p/ns/pid" 2>/dev/null)" = "$ns" ] || continue
                if grep -qE "^NSpid:.*[[:space:]]$2\$" "$st" 2>/dev/null; then
                        echo "$p"
                        return 0
                fi
        done
        return 1
}

# Wait until file $1 has a line matching $2 (5 s).
wait_for_line() {
        local i
        for i in $(seq 500); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.01; done
        fail "no '$2' in $1"
}

# For a run as another user (setpriv --reuid=65534): copies, readable by anyone, of the binary
# and its simulated libraries, and of any files given, in $GV_TMP/nobody (the build and source
# trees may lie where only root can enter, as under /root). Sets NOBODY_BIN (ghostvram there,
# which finds the libraries beside it), NOBODY_SIMLIB (the libraries) and NOBODY_DIR.
nobody_copy() { # [FILE...]
        NOBODY_DIR=$GV_TMP/nobody
        mkdir -p "$NOBODY_DIR"
        chmod 755 "$GV_TMP"
        [ -e "$NOBODY_DIR/ghostvram" ] || cp "$GV_BIN" "$NOBODY_DIR/ghostvram"
        [ -e "$NOBODY_DIR/sim" ] || cp -r "$GV_BUILD/sim" "$NOBODY_DIR/sim"
        local f
        for f in "$@"; do cp -rL "$f" "$NOBODY_DIR/"; done
        chmod -R a+rX "$NOBODY_DIR"
        NOBODY_BIN=$NOBODY_DIR/ghostvram
        NOBODY_SIMLIB=$NOBODY_DIR/sim
}
