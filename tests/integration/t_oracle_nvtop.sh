#!/usr/bin/env bash
# nvtop 3.0.1 (Debian's, unmodified) on the simulated driver, read from its screen under tmux:
# it runs (the stand-in exports every NVML call it needs), shows both GPUs with the memory
# NVML reports, and for a killed owner whose workers keep the memory it lists the dead PID
# with that memory - not the workers, which ghostvram names.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/oracle_lib.sh"
oracle_fetch
oracle_foreign_env
command -v tmux >/dev/null || fail "tmux is missing (Debian package tmux)"
# the server's socket in this run's directory ($$ is 1 in every PID namespace: a name made of
# it would be the same for runs side by side)
SOCK=$GV_TMP/tmux.sock
gv_on_exit 'tmux -S "$SOCK" kill-server 2>/dev/null'

sim_new --gpus 2
sim_run --gpu 0 --mib 4096 --workers 2
a=$OWNER a_workers=("${WORKERS[@]}")
sim_run --gpu 1 --mib 1024
b=$OWNER

# nvtop in a 200x30 tmux window, no plots (-p), refreshing every 0.2 s
nvtop_start() { # SESSION
        tmux -S "$SOCK" new-session -d -s "$1" -x 200 -y 30 \
                "env ${FOREIGN_ENV[*]} GHOSTVRAM_SIM=$SIM LD_LIBRARY_PATH=$GV_BUILD/sim/current TERM=xterm $NV/nvtop -p -d 2 2>&1; sleep 60"
}
# (a screen is read whole before it is matched: a 200x30 screen is more than one write, and
# grep -q quitting early would fail the pipe under pipefail)
screen() { tmux -S "$SOCK" capture-pane -p -t "$1"; }
# Wait until the screen of session $1 matches the extended regex $2 (10 s)
wait_screen() {
        local i
        for i in $(seq 100); do grep -qE "$2" <<<"$(screen "$1")" && return 0; sleep 0.1; done
        screen "$1"
        fail "nvtop's screen never showed /$2/"
}
# nvtop's process line of PID $2: "PID USER DEV TYPE GPU% GPU-MEM GPU-MEM% CPU% HOST-MEM Command"
proc_line() { screen "$1" | grep -E "^ +$2 " || true; }

nvtop_start live
wait_screen live "^ +$b "
screen live | sed -n 1,8p
grep -q "No GPU to monitor" <<<"$(screen live)" && fail "nvtop found no GPU"
name="NVIDIA H100 80GB HBM3 (simulated)"
for g in 0 1; do
        grep -qF "Device $g [$name] PCIe GEN 5@16x" <<<"$(screen live)" || fail "nvtop does not show GPU $g"
done
# its memory bar uses the v1 figure (reserved included): nvtop asks for MemoryInfo_v2 with a
# bare version 2, which the driver refuses (FUNCTION_NOT_FOUND), and falls back
# 4096 + 579 MiB = 4.565 GiB and 1024 + 579 = 1.565 GiB of 81559 MiB = 79.647 GiB
grep -qF "4.565Gi/79.647Gi" <<<"$(screen live)" || fail "nvtop's GPU 0 memory is not reserved + 4096 MiB"
grep -qF "1.565Gi/79.647Gi" <<<"$(screen live)" || fail "nvtop's GPU 1 memory is not reserved + 1024 MiB"
read -r pid _ dev type _ mem _ <<<"$(proc_line live "$a")"
assert_eq "$pid $dev $type $mem" "$a 0 Compute 4096MiB" "nvtop's line for the owner on GPU 0"
read -r pid _ dev type _ mem _ <<<"$(proc_line live "$b")"
assert_eq "$pid $dev $type $mem" "$b 1 Compute 1024MiB" "nvtop's line for the job on GPU 1"

note "kill -9 the owner: its two workers keep the 4096 MiB"
kill_wait "$a"
sleep 1
screen live | sed -n 4,8p
read -r pid _ dev type _ mem _ <<<"$(proc_line live "$a")"
assert_eq "$pid $dev $type $mem" "$a 0 Compute 4096MiB" "nvtop still lists the dead owner with its memory"
for w in "${a_workers[@]}"; do
        [ -z "$(proc_line live "$w")" ] || fail "nvtop lists worker $w"
done

# a fresh nvtop never saw the owner alive: the dead PID, its memory, no command
nvtop_start fresh
wait_screen fresh "^ +$b "
line=$(proc_line fresh "$a")
echo "$line"
read -r pid _ dev type _ mem _ _ _ cmd <<<"$line"
assert_eq "$pid $dev $type $mem" "$a 0 Compute 4096MiB" "a fresh nvtop's line for the dead owner"
# (CPU and host memory read N/A once the owner is reaped, 0 while it is a zombie)
assert_eq "${cmd:-}" "" "a fresh nvtop's command for the dead owner"
for w in "${a_workers[@]}"; do
        [ -z "$(proc_line fresh "$w")" ] || fail "a fresh nvtop lists worker $w"
done

note "what ghostvram says about the same host"
json=$(GHOSTVRAM_SIM=$SIM "$GV_BIN" snapshot --json) || true
# dead: gone, or a zombie where nothing reaps it (no subreaper outside a PID namespace here)
assert_eq "$(jq -r ".gpus[0].nvml_processes[] | select(.pid == $a) | [.used_bytes, (.host.present == false or .host.zombie)] | @tsv" <<<"$json")" \
        "$((4096 * MIB))	true" "ghostvram: NVML's dead owner and its memory"
holders=$(jq -r '[.holders[]?.pid] | sort | map(tostring) | join(" ")' <<<"$json")
for w in "${a_workers[@]}"; do
        grep -qw "$w" <<<"$holders" || fail "ghostvram does not name worker $w as a holder (holders: $holders)"
done
echo "PASS"
