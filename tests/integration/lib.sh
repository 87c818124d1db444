# lib.sh: helpers for the integration tests (source it). They drive the real binary against
# the simulated driver with real processes, and kill every process they started on EXIT,
# pass or fail. Environment (from ctest): GV_BIN, GV_BUILD, GV_SRC.
set -euo pipefail

: "${GV_BIN:?GV_BIN must name the ghostvram binary}"
: "${GV_BUILD:?GV_BUILD must name the build directory}"
GV_QUERY="$GV_BUILD/sim/gv-simquery"
GV_TMP=$(mktemp -d /tmp/gv-it.XXXXXX)
# What is killed on exit, each entry with the start time (field 22 of /proc/PID/stat, clock
# ticks since boot) it had when tracked: a PID, once its process is gone, may name another
# process (of another test, or of the host) — only a process that still has that start time is
# killed. PIDs wrap around (pid_max may be 32768) while many tests fork at once.
GV_PIDS=()      # PID:START of every process started (track)
GV_GROUPS=()    # PGID:LEADER-START:FIRST-START of the process groups of jobs (track_group)
MIB=1048576
# The tests read ghostvram's English sentences whatever the caller's language (t_i18n sets its
# own): no LANGUAGE, messages of the C locale (LC_ALL, when set, outranks LC_MESSAGES)
unset LANGUAGE
export LC_MESSAGES=C
[ -z "${LC_ALL:-}" ] || export LC_ALL=C.UTF-8

# _gv_stat PID: _GV_ST gets fields 3.. of /proc/PID/stat ([0] state, [2] process group,
# [19] start time), read after the last ')' (the command name may hold spaces and parentheses);
# 1 when there is no such process.
_gv_stat() {
        local s
        [[ $1 =~ ^[1-9][0-9]*$ ]] || return 1
        { IFS= read -r s <"/proc/$1/stat"; } 2>/dev/null || return 1
        s=${s##*) }
        read -r -a _GV_ST <<<"$s"
        [ "${#_GV_ST[@]}" -ge 20 ]
}

# _gv_kill_group PGID LEADER-START FIRST-START: SIGKILL the group, if it is still the one
# tracked. While its leader lives (start time LEADER-START), its PID cannot name anything else:
# kill -- -PGID. When another process has the leader's PID, the group ended (the kernel does
# not give out a PID that is still some process's group ID) and PGID is another group now:
# nothing. When no process has that PID, the group may have outlived its leader: each process
# of group PGID that started at or after FIRST-START (the leader's start, or its first known
# member's) is killed. (What this cannot tell apart: PGID given to a new process, which led a
# group of its own and is gone already while its members live — after a wrap-around of the
# PIDs, all within one test.)
_gv_kill_group() {
        local st p
        if _gv_stat "$1"; then
                if [ "${_GV_ST[19]}" = "$2" ]; then kill -9 -- "-$1" 2>/dev/null || true; fi
                return 0
        fi
        for st in /proc/[0-9]*/stat; do
                p=${st#/proc/}
                p=${p%/stat}
                _gv_stat "$p" || continue
                if [ "${_GV_ST[2]}" = "$1" ] && [ "${_GV_ST[19]}" -ge "$3" ]; then kill -9 "$p" 2>/dev/null || true; fi
        done
        return 0
}

# gv_on_exit CMD: run CMD (a string for eval) at exit, before the tracked processes are ended;
# the script's exit status is kept whatever CMD returns (a test's own trap calling gv_cleanup
# after a command of its own would exit with that command's status: a failure passing).
GV_EXIT_HOOKS=()
gv_on_exit() { GV_EXIT_HOOKS+=("$1"); }
gv_cleanup() {
        local rc=$?
        local p f e pid start lstart fstart
        for e in "${GV_EXIT_HOOKS[@]}"; do eval "$e" || true; done
        for e in "${GV_GROUPS[@]}"; do
                IFS=: read -r pid lstart fstart <<<"$e"
                _gv_kill_group "$pid" "$lstart" "$fstart" || true
        done
        for e in "${GV_PIDS[@]}"; do
                IFS=: read -r pid start <<<"$e"
                if _gv_stat "$pid" && [ "${_GV_ST[19]}" = "$start" ]; then kill -9 "$pid" 2>/dev/null || true; fi
        done
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

# Remember processes to kill on exit, with their start times (a process already gone is not
# remembered: its PID may be reused).
track() {
        local p
        for p in "$@"; do
                [ -n "$p" ] || continue
                _gv_stat "$p" || continue
                GV_PIDS+=("$p:${_GV_ST[19]}")
        done
}

# track_group PGID [MEMBER]: remember process group PGID to kill on exit, by the start time of
# its leader (process PGID); when the leader is gone already (a launcher that exited), by that
# of MEMBER, a process of the group, instead (the group's processes started after it count).
track_group() {
        local lstart=""
        if _gv_stat "$1"; then
                lstart=${_GV_ST[19]}
                GV_GROUPS+=("$1:$lstart:$lstart")
        elif [ -n "${2:-}" ] && _gv_stat "$2"; then
                GV_GROUPS+=("$1::${_GV_ST[19]}")
        fi
}

# Forget PIDs (of processes now dead: kill_wait).
_gv_forget() {
        local e p keep=()
        for e in "${GV_PIDS[@]}"; do
                for p in "$@"; do [ "${e%%:*}" = "$p" ] && continue 2; done
                keep+=("$e")
        done
        GV_PIDS=("${keep[@]}")
}

# A fresh simulated host; sets SIM.
# sim_shm_large [PID]: the simulated host's shared memory made large (docs/simulator.md, "Host
# shared memory"): a 2 MiB file in DIR/dev/shm, a SysV segment of 1 MiB created by PID (default
# this shell) in DIR/proc/sysvipc/shm, and DIR/proc/meminfo of a 10 MiB host whose Shmem is 3 MiB
# (large: over 10% of MemTotal).
sim_shm_large() {
        local pid=${1:-$$}
        mkdir -p "$SIM/dev/shm" "$SIM/proc/sysvipc"
        head -c 2097152 /dev/zero | tr '\0' x >"$SIM/dev/shm/psm_ghost"
        printf '%s\n%10d %10d  %4o %21d %5d %5d  %5d %5d %5d %5d %5d %10d %10d %10d %21d %21d\n' \
                "       key      shmid perms                  size  cpid  lpid nattch   uid   gid  cuid  cgid      atime      dtime      ctime                   rss                  swap" \
                0 65537 0600 1048576 "$pid" "$pid" 1 "$(id -u)" 0 "$(id -u)" 0 0 0 1700000000 1048576 0 >"$SIM/proc/sysvipc/shm"
        printf 'MemTotal:          10240 kB\nShmem:              3072 kB\n' >"$SIM/proc/meminfo"
}

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
        track_group "${LAUNCHER:-$OWNER}" "$OWNER"
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

# Is the process gone (or a zombie whose threads have all exited: it holds no files)?
is_dead() {
        local st f
        st=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
        st=${st##*) }
        read -r -a f <<<"$st"
        # a zombie whose other threads are gone too: a multi-threaded process's leader turns
        # zombie while its other threads still exit, and the descriptors they share close with
        # the last of them (qemu-user adds a thread to each guest: docs/arm64.md)
        [ "${f[0]}" = Z ] && [ "${f[17]:-1}" -le 1 ]
}

# kill -9 each PID and wait until it is dead.
kill_wait() {
        local p i
        for p in "$@"; do kill -9 "$p" 2>/dev/null || true; done
        for p in "$@"; do
                for i in $(seq 500); do is_dead "$p" && break; sleep 0.01; done
                is_dead "$p" || fail "process $p did not die"
        done
        _gv_forget "$@"
}

# Does process $1 hold a simulated device file by descriptor / by mapping?
# (ls's output read whole: many descriptors are more than one write, and grep -q quitting
# early would fail the pipe under pipefail)
holds_fd() { grep -q "$SIM/dev/nvidia" <<<"$(ls -l "/proc/$1/fd" 2>/dev/null)"; }
holds_map() { grep -q "$SIM/dev/nvidia" "/proc/$1/maps" 2>/dev/null; }

# wait_holder PID ARGV0: until process PID runs with first argument ARGV0 (its exec done) and
# holds a simulated device file by descriptor (30 s): a helper started with
# bash -c "exec 3<DEV...; exec [-a ARGV0] PROGRAM..." is then what the test means.
wait_holder() {
        local i a0
        for i in $(seq 3000); do
                a0=""
                { IFS= read -r -d '' a0 <"/proc/$1/cmdline"; } 2>/dev/null || true
                [ "$a0" = "$2" ] && holds_fd "$1" && return 0
                sleep 0.01
        done
        fail "process $1 did not become '$2' holding a device file (argv[0] '$a0')"
}

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

# Wait until file $1 has a line matching $2 (30 s: a loaded machine; it returns as soon as the
# line is there).
wait_for_line() {
        local i
        for i in $(seq 3000); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.01; done
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
