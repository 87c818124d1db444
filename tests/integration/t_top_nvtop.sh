#!/usr/bin/env bash
# `ghostvram top` for nvtop and nvitop users, under tmux on a simulated 3-GPU host whose figures
# are set (sim set util_gpu=..., temp=..., ...): nvtop's figures per GPU with the exact values
# and n/a where the driver gives none, the utilisation graph, per-process %SM, %CPU, RSS and
# running time, the rows of a MIG instance's job, an MPS client and the MPS server; sorting by
# any column, the / filter, the tree; the kill path (k ends exactly the selected process through
# reclaim's checks; a live owner only after F then Y; a process that ignores SIGTERM gets
# SIGKILL on the next k); nvtop's and nvitop's keys and options (-d, -g, --once, -1, F10, h).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/serve_lib.sh"

sim_new --gpus 3 --memory 16384 --reserved 512
"$GV_BIN" sim set "$SIM" util_gpu=0:60 util_mem=0:12 temp=0:58 power=0:250 power_limit=0:700 clock_sm=0:1410 \
        clock_mem=0:2619 fan=0:40 pcie_rx=0:3000 pcie_tx=0:512 enc=0:5 dec=0:7 ecc_uncorrected=0:2 remap_pending=0:on \
        temp=1:na power=1:na fan=1:na mig_instances=2:2 >/dev/null
# GPU 0: a live job, its second worker in a session of its own; GPU 1: two killed jobs (ghosts),
# the second one's worker ignoring SIGTERM; GPU 2: a job in MIG instance 1
sim_run --gpu 0 --mib 2048 --workers 2 --setsid-workers 1
LIVE=$OWNER LW1=${WORKERS[0]} LW2=${WORKERS[1]}
sim_run --gpu 1 --mib 1024 --workers 2
kill_wait "$OWNER"
DEAD=$OWNER GW2=${WORKERS[0]} GW3=${WORKERS[1]}
trap '' TERM
sim_run --gpu 1 --mib 1024 --workers 1
trap - TERM
kill_wait "$OWNER"
DEAD1=$OWNER GW1=${WORKERS[0]}
sim_run --gpu 2 --mib 1024 --mig-instance 1
MIG=$OWNER
# an MPS client on GPU 1 (NVML's MPS list) and the MPS server, a daemon holding the nodes
sim_run --gpu 1 --mib 256 --mps
MPSC=$OWNER
cp "$(command -v sleep)" "$GV_TMP/nvidia-cuda-mps-server"
bash -c "exec 3<'$SIM/dev/nvidiactl' 4<'$SIM/dev/nvidia1' 5<'$SIM/dev/nvidia-uvm'; exec '$GV_TMP/nvidia-cuda-mps-server' 600" &
MPSD=$!
track "$MPSD"

note "--once (nvitop's -1): one frame, nvtop's figures with their values, n/a where the driver gives none"
F=$(GHOSTVRAM_SIM="$SIM" COLUMNS=160 "$GV_BIN" top --once 2>&1) || fail "top --once: $F"
assert_eq "$(grep -c '^ghostvram top  ' <<<"$F")" 1 "one frame"
grep -qF "  GPU 60%  MEM 12%  TEMP 58C  POW 250/700 W  CLK 1410/2619 MHz  FAN 40%  PCIe RX 3 MB/s TX 512 KB/s  ENC 5% DEC 7%  ECC 2  REMAP pending" \
        <<<"$F" || fail "GPU 0's figures: $F"
grep -qF "  GPU 0%  MEM 0%  TEMP n/a  POW n/a/700 W  CLK 345/2619 MHz  FAN n/a  PCIe RX 0 KB/s TX 0 KB/s  ENC 0% DEC 0%  ECC 0  REMAP no" \
        <<<"$F" || fail "GPU 1's figures (n/a where the driver gives none): $F"
grep -qE "  REMAP no  MIG 2$" <<<"$F" || fail "GPU 2's MIG devices: $F"
# the live owner: 60% of its GPU (the only process NVML lists there), its running time
grep -qE "^ +$LIVE root +S 0 +2048 +60 +[0-9.]+ +[0-9.]+[KMG] +[0-9]+:[0-9]{2}  owner " <<<"$F" || fail "the owner's row: $F"
grep -qE "^ +$MIG root +S 2/1 +1024 +0 " <<<"$F" || fail "the MIG instance's row (GPU 2, instance 1): $F"
grep -qE "^ +$MPSC root +S 1 +256 .*  owner, MPS client " <<<"$F" || fail "the MPS client's row: $F"
grep -qE "^ +$MPSD root +S 1 .*  MPS +nvidia-cuda-mps" <<<"$F" || fail "the MPS server's row: $F"
grep -qE "^ +$GW2 root +S 1 +- +0 .* worker of dead PID $DEAD " <<<"$F" || fail "the ghost worker's row: $F"
"$GV_BIN" sim set "$SIM" temp=1:default >/dev/null
F=$(GHOSTVRAM_SIM="$SIM" COLUMNS=160 "$GV_BIN" top -1 -g 1 2>&1) || fail "top -1 -g 1: $F"
grep -q "^GPU 0 " <<<"$F" && fail "-g 1 shows GPU 0"
grep -qF "TEMP 33C" <<<"$F" || fail "temp back to its default: $F"

note "options nvtop users type: -d in tenths, refused values say what to use"
RC=0
OUT=$(GHOSTVRAM_SIM="$SIM" "$GV_BIN" top -d 1 --once 2>&1) || RC=$?
assert_eq "$RC" 2 "-d 1 (0.1 s) is refused"
grep -qF "(nvtop's -d 10 is 1 s)" <<<"$OUT" || fail "-d's error: $OUT"
GHOSTVRAM_SIM="$SIM" "$GV_BIN" top -d 5 --batch -n 2 >"$GV_TMP/d5.out" 2>&1 || fail "top -d 5"
grep -qE "every 0\.5 s" "$GV_TMP/d5.out" || fail "-d 5 is 0.5 s: $(head -3 "$GV_TMP/d5.out")"

. "$(dirname "$0")/top_lib.sh"
note "the screen, 160x50: the figures, the graph, the table's columns"
TOP_ARGS="--no-kernel"
top_session a 160 50 NO_COLOR=1
wait_screen a 10 "^  GPU 60%  MEM 12%  TEMP 58C  POW 250/700 W "
wait_screen a 10 "^  util +[_.:=+*#-]*=  60%   used "
wait_screen a 10 "^    PID USER       S GPU   NVML MiB  %SM  %CPU    RSS       TIME  ROLE +LINK / COMMAND +sort: gpu$"
wait_screen a 10 "^ +$MIG root +S 2/1 +1024 "
wait_screen a 10 "^ +$MPSC root +S 1 +256 .*  owner, MPS client "
wait_screen a 10 "^ +$MPSD root +S 1 .*  MPS +nvidia-cuda-mps"

note "sorting: s (F6, >) the next column, < the previous, I reverses"
for want in pid memory sm cpu; do
        key a s
        wait_screen a 10 "sort: $want$"
done
key a '<'
wait_screen a 10 "sort: sm$"
# by %SM: the live owner (60%) first
wait_screen a 10 "^ +$LIVE root +S 0 +2048 +60 "
rows=$(screen_of a | grep -E '^ +[0-9]+ (root|\?) ' | head -1)
grep -qE "^ +$LIVE " <<<"$rows" || fail "sorted by sm, the first row is not the 60% owner: $rows"
key a I
wait_screen a 10 "sort: sm \^$"
key a F6
wait_screen a 10 "sort: cpu$"

note "the filter: / then text, the rows follow; Esc clears it"
key a / "$GW2"
wait_screen a 10 "^filter: ${GW2}_ "
wait_screen a 10 "^ +$GW2 root .* worker of dead PID $DEAD"
no_screen a "^ +$GW3 root "
key a Enter
wait_screen a 10 "^filter: " gone
no_screen a "^ +$LIVE root "
key a / Escape
wait_screen a 10 "^ +$LIVE root "

note "the tree: t; a worker under its owner, the setsid'd one too (tied to the live job)"
key a t
wait_screen a 10 "sort: tree$"
tree=$(screen_of a)
lines=$(grep -nE "^ +($LIVE|$LW1|$LW2) root " <<<"$tree" | cut -d: -f1 | tr '\n' ' ')
# the owner, then its two workers right below it, indented
grep -qE "^ +$LIVE root .*  owner " <<<"$tree" || fail "tree: the owner $LIVE is no root: $tree"
grep -qE "^ +$LW1 root .* +\`- worker of live PID $LIVE" <<<"$tree" || fail "tree: $LW1 not under $LIVE: $tree"
grep -qE "^ +$LW2 root .* +\`- worker of live PID $LIVE" <<<"$tree" || fail "tree: $LW2 (setsid) not under $LIVE: $tree"
read -r a b c <<<"$lines"
[ $((b - a)) -eq 1 ] && [ $((c - b)) -eq 1 ] || fail "tree: the job's rows are not together (lines $lines): $tree"
grep -qE "^ +$GW2 root .* +\`- worker of dead PID $DEAD" <<<"$tree" || fail "tree: ghost worker not under its dead owner: $tree"
key a t

note "k ends exactly the selected process, through reclaim (asked first)"
key a / "$GW2" Enter
wait_screen a 10 "^ +$GW2 root "
key a k
wait_screen a 10 "^SIGTERM to PID $GW2 \(gv-simcuda\)\? y: yes, through reclaim's checks"
key a n
wait_screen a 10 "^nothing done"
is_dead "$GW2" && fail "n ended the process"
key a k
wait_screen a 10 "^SIGTERM to PID $GW2 "
key a y
wait_screen a 20 "PID $GW2 \(gv-simcuda\): terminated after [0-9.]+ s \(signals: SIGTERM\)"
wait_screen a 10 "ghostvram reclaim --pid $GW2 --signal TERM exited [0-9]+; logged to syslog"
for _ in $(seq 200); do is_dead "$GW2" && break; sleep 0.01; done
is_dead "$GW2" || fail "PID $GW2 still alive after k y"
is_dead "$GW3" && fail "PID $GW3 (of the same job) was signalled too"
is_dead "$GW1" && fail "PID $GW1 was signalled too"
is_dead "$LIVE" && fail "the live owner was signalled"
key a Escape / Escape

note "a process that ignores SIGTERM: still there, said so; k again offers SIGKILL"
key a / "$GW1" Enter
wait_screen a 10 "^ +$GW1 root "
key a F9
wait_screen a 10 "^SIGTERM to PID $GW1 "
key a y
wait_screen a 20 "It is still there: press k again to send SIGKILL"
is_dead "$GW1" && fail "SIGTERM ended a process that ignores it"
key a Escape k
wait_screen a 10 "^SIGKILL to PID $GW1 "
key a y
wait_screen a 20 "PID $GW1 \(gv-simcuda\): killed after"
for _ in $(seq 200); do is_dead "$GW1" && break; sleep 0.01; done
is_dead "$GW1" || fail "PID $GW1 survived SIGKILL"
key a Escape / Escape

note "a live owner: refused, said why; only F then Y (capital) ends it"
key a / "$LIVE" Enter
wait_screen a 10 "^ +$LIVE root .* owner "
key a k
wait_screen a 10 "^SIGTERM to PID $LIVE "
key a y
wait_screen a 20 "PID $LIVE was not signalled: "
wait_screen a 10 "It belongs to a running job \(live-owner\): ending it ends that job's work\. Press F"
is_dead "$LIVE" && fail "the live owner was ended without the second confirmation"
key a F
wait_screen a 10 "^End PID $LIVE although it belongs to a running job \(--force\)\? Y \(capital\): yes"
key a y
wait_screen a 10 "^nothing done"
is_dead "$LIVE" && fail "a lower-case y ended the live owner"
key a Escape F
wait_screen a 10 "^End PID $LIVE although"
key a Y
wait_screen a 20 "PID $LIVE \(gv-simcuda\): terminated after"
wait_screen a 10 "ghostvram reclaim --pid $LIVE --signal TERM --force exited"
for _ in $(seq 200); do is_dead "$LIVE" && break; sleep 0.01; done
is_dead "$LIVE" || fail "the live owner survived the forced SIGTERM"
is_dead "$MIG" && fail "the MIG job was signalled"
key a Escape / Escape

note "PID 1 of this namespace: never, whatever is confirmed"
out=$(GHOSTVRAM_SIM="$SIM" "$GV_BIN" reclaim --pid 1 --signal TERM --grace none --wait 3s --confirm 200ms --yes --json --force || true)
assert_eq "$(jq -r '.plan.skipped[0].rule' <<<"$out")" pid-1 "PID 1's rule"

note "h and F1 show the help, F10 quits and leaves the terminal clean"
key a h
wait_screen a 10 "k F9 T +SIGTERM the selected process"
key a Escape F1
wait_screen a 10 "t F5 +tree: a process under its parent"
key a Escape F10
clean_after a
echo PASS
