# shellcheck shell=bash
# slurm_lib.sh: a real single-node Slurm for the integration tests (source it after lib.sh and
# serve_lib.sh, for free_port).
# Debian's munged, slurmctld and slurmd run in the foreground as the test's children, with
# every file under $GV_TMP/slurm and ports on 127.0.0.1 only; no systemd. slurm_stop ends
# the jobs, the daemons, and then any process still holding a file of the test's directory;
# it runs on exit, pass or fail. A missing package is a failure, never a skip.
# Sets: SL (the directory), SLURM_CONF (exported), SL_NODE, SL_PIDS (munged slurmctld slurmd).

# The node's name, one of its own: with proctrack/cgroup slurmd's cgroups are named after it,
# and another run of this test (another PID namespace, another checkout) must not meet them:
# $$ is 1 in every PID namespace, so the name also carries a number from this run's $GV_TMP.
SL_ID=$(cksum <<<"$GV_TMP" | cut -d' ' -f1)
SL_NODE="gv${SL_ID}x$RANDOM"

slurm_need() {
        need_tool munged munge
        need_tool munge munge
        need_tool slurmctld slurmctld
        need_tool slurmd slurmd
        local c
        for c in sbatch scontrol sinfo squeue scancel; do need_tool "$c" slurm-client; done
}

# slurm_start EXTRA_CONF_LINES: write slurm.conf (plus the lines given), start the daemons,
# wait until the node is idle.
slurm_start() {
        local host
        slurm_need
        SL="$GV_TMP/slurm"
        host=$(hostname -s)
        # munged wants every directory above its socket searchable by all, its key private
        chmod 755 "$GV_TMP"
        mkdir -p "$SL/run" "$SL/state" "$SL/spool" "$SL/log" "$SL/munge"
        chmod 755 "$SL" "$SL/run"
        chmod 700 "$SL/munge"
        head -c 1024 /dev/urandom >"$SL/munge/munge.key"
        chmod 400 "$SL/munge/munge.key"
        export SLURM_CONF="$SL/slurm.conf"
        cat >"$SLURM_CONF" <<EOF
ClusterName=gvtest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
AuthType=auth/munge
AuthInfo=socket=$SL/run/munge.sock
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$SL/state
SlurmdSpoolDir=$SL/spool
SlurmctldPidFile=$SL/run/slurmctld.pid
SlurmdPidFile=$SL/run/slurmd.pid
SlurmctldLogFile=$SL/log/slurmctld.log
SlurmdLogFile=$SL/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
# linuxproc: orphans outlive the job and the Epilog sees them; cgroup: Slurm kills them
ProctrackType=${SL_PROCTRACK:-proctrack/linuxproc}
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
SchedulerType=sched/builtin
MailProg=/bin/true
SlurmctldTimeout=10
SlurmdTimeout=10
MessageTimeout=10
NodeName=$SL_NODE NodeHostname=$host NodeAddr=127.0.0.1 CPUs=2 State=UNKNOWN
PartitionName=gv Nodes=$SL_NODE Default=YES MaxTime=INFINITE State=UP
$1
EOF
        # cgroup v1 as on this kind of machine (hybrid; cgroup/v2 refuses to start there)
        printf 'CgroupPlugin=cgroup/v1\nCgroupMountpoint=/sys/fs/cgroup\nConstrainCores=no\nConstrainRAMSpace=no\nConstrainDevices=no\n' \
                >"$SL/cgroup.conf"
        SL_PIDS=()
        munged -F --socket="$SL/run/munge.sock" --key-file="$SL/munge/munge.key" \
                --pid-file="$SL/run/munged.pid" --log-file="$SL/log/munged.log" \
                --seed-file="$SL/munge/munged.seed" >>"$SL/log/munged.out" 2>&1 &
        SL_PIDS+=($!)
        for _ in $(seq 100); do [ -S "$SL/run/munge.sock" ] && break; sleep 0.05; done
        [ -S "$SL/run/munge.sock" ] || fail "munged did not start: $(tail -3 "$SL/log/munged.log" 2>/dev/null)"
        slurmctld -D -i -f "$SLURM_CONF" >>"$SL/log/slurmctld.out" 2>&1 &
        SL_PIDS+=($!)
        slurmd -D -N "$SL_NODE" -f "$SLURM_CONF" >>"$SL/log/slurmd.out" 2>&1 &
        SL_PIDS+=($!)
        slurm_wait_node idle 30
}

# The node's state as sinfo prints it (idle, drained, completing, ...).
node_state() { sinfo -h -n "$SL_NODE" -o %T 2>/dev/null | head -n 1; }

# The node's drain reason as `scontrol show node` prints it ("" when none), without
# the "[user@time]" Slurm appends.
node_reason() {
        scontrol show node "$SL_NODE" | sed -n 's/^ *Reason=\(.*\) \[[^]]*\]$/\1/p'
}

# slurm_wait_node STATE [SECONDS]: until sinfo shows STATE.
slurm_wait_node() {
        local n=$((${2:-20} * 10))
        for _ in $(seq "$n"); do
                [ "$(node_state)" = "$1" ] && return 0
                sleep 0.1
        done
        fail "node $SL_NODE is '$(node_state)', not '$1' (reason: $(node_reason)); slurmd: $(tail -5 "$SL/log/slurmd.log" 2>/dev/null)"
}

# The job's state (scontrol's JobState) and its Reason.
job_state() { scontrol show job "$1" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p'; }
job_reason() { scontrol show job "$1" 2>/dev/null | sed -n 's/.* Reason=\([^ ]*\).*/\1/p'; }

# slurm_wait_job ID [SECONDS]: until the job has ended and its Epilog has run (the node is no
# longer completing).
slurm_wait_job() {
        local n=$((${2:-30} * 10)) st
        for _ in $(seq "$n"); do
                st=$(job_state "$1")
                case $st in
                COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY)
                        case $(node_state) in
                        *completing* | allocated* | mixed*) ;;
                        *) return 0 ;;
                        esac
                        ;;
                esac
                sleep 0.1
        done
        fail "job $1 is '$(job_state "$1")', node '$(node_state)'; slurmd: $(tail -5 "$SL/log/slurmd.log" 2>/dev/null)"
}

# End everything the test started: jobs, slurmd, slurmctld, munged (SIGTERM, then SIGKILL
# after 2 s), then any process left holding a file under $GV_TMP (a job's slurmstepd, its
# orphans). Safe to call twice.
slurm_stop() {
        local p d
        [ -n "${SL:-}" ] || return 0
        if [ "${#SL_PIDS[@]}" -gt 0 ]; then
                timeout 5 scancel --full --quiet --partition=gv 2>/dev/null || true
                for _ in $(seq 50); do
                        [ -z "$(timeout 2 squeue -h -o %i 2>/dev/null)" ] && break
                        sleep 0.1
                done
                for p in "${SL_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
                for p in "${SL_PIDS[@]}"; do
                        for _ in $(seq 20); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
                        kill -KILL "$p" 2>/dev/null || true
                        wait "$p" 2>/dev/null || true
                done
                SL_PIDS=()
        fi
        for p in $(tmp_holders); do kill -KILL "$p" 2>/dev/null || true; done
        for _ in $(seq 20); do [ -z "$(tmp_holders)" ] && break; sleep 0.1; done
        # slurmd's cgroups (proctrack/cgroup), empty once its jobs are gone
        for d in /sys/fs/cgroup/*/"slurm_$SL_NODE"; do
                [ -d "$d" ] && find "$d" -depth -type d -exec rmdir {} + 2>/dev/null
        done
        return 0
}

# PIDs of the processes (but this shell) holding a file under $GV_TMP open.
tmp_holders() {
        find /proc/[0-9]*/fd -maxdepth 1 -lname "$GV_TMP/*" 2>/dev/null | cut -d/ -f3 | sort -u |
                grep -vxF -e "$$" -e "$BASHPID" || true
}

# Processes holding a file under $GV_TMP, with their names (there should be none after
# slurm_stop).
holders_left() {
        local p out=""
        for p in $(tmp_holders); do out="$out $p($(cat "/proc/$p/comm" 2>/dev/null))"; done
        echo "${out# }"
}
