#!/usr/bin/env bash
# `ghostvram top` under tmux on the simulated driver: a killed job's ghost (the bar's letters
# without colour, the MiB, the verdict), its workers' PIDs and links, the Xid 45 of the kill;
# the keys (g, up/down, r: reclaim's dry-run plan, x, ?); resizing; a hung GPU (the sample
# ages with the reason while the keys answer); quitting with q and with SIGTERM leaves the
# terminal clean (the screen restored, the tty back in canonical mode with echo); TERM=dumb
# gives plain frames with letters.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/serve_lib.sh"


sim_new --gpus 2 --memory 16384 --reserved 512
sim_run --gpu 1 --mib 2048 --workers 2 --busy
kill_wait "$OWNER"
W1=${WORKERS[0]} W2=${WORKERS[1]}

. "$(dirname "$0")/top_lib.sh"

note "the ghost: 140x40, NO_COLOR (letters in the bar)"
top_session a 140 40 NO_COLOR=1
# GPU 1: 512 MiB reserved + 2048 MiB ghost of 16384 on a 60-cell bar: RR, then 7 G, 51 free;
# used as scan says it (2048: the reservation apart, labelled)
wait_screen a 10 '^GPU 1 .* orphaned-holders \(high confidence\)$'
wait_screen a 10 "^  \[RRGGGGGGG\.{51}\] used 2048/16384 MiB  ghost 2048 MiB \(confirmed\)  reserved 512 MiB apart$"
wait_screen a 10 "^  \[RR\.{58}\] used 0/16384 MiB  ghost 0 MiB  reserved 512 MiB apart$"
wait_screen a 10 '^GPU 0 .* ok \(high confidence\)$'
wait_screen a 10 "^ +$OWNER .* 1 +2048 .* dead owner"
wait_screen a 10 "^ +$W1 root +S 1 +- .* worker of dead PID $OWNER +gv-simcuda"
wait_screen a 10 "^ +$W2 root +S 1 +- .* worker of dead PID $OWNER +gv-simcuda"
wait_screen a 10 "^kernel [0-9:]{8} GPU 1 Xid 45 .*\(pid $OWNER\)"
wait_screen a 10 "^bar: R reserved  L listed  F foreign  G ghost  U unattributed  ~ freeing  \. free"
wait_screen a 10 "2048 MiB ghost held by 2 orphaned processes of a dead job"

note "keys: down selects a worker and shows its link; g focuses; r plans; x; ?"
key a Down
wait_screen a 10 "^PID $W1: worker of dead PID $OWNER, same process group \(high confidence\)"
wait_screen a 10 "^PID $W1: worker of dead PID $OWNER, same process group \(high confidence\)  family [0-9]+ \(its members' PIDs in bold\)"
key a g
wait_screen a 10 '^ghostvram top  SIMULATED HOST  GPU 0 '
no_screen a "worker of dead PID"
key a g
wait_screen a 10 '^ghostvram top  SIMULATED HOST  GPU 1 '
wait_screen a 10 "^    - NVML lists PID $OWNER with 2048 MiB: (no such process|zombie)"
# the next step whole, wrapped (it was cut at the edge): its end on the line below
wait_screen a 10 "^  next: free it safely "
wait_screen a 10 "^        .*\(by hand: kill -TERM $W1 $W2\)$"
key a r
wait_screen a 10 "PID $W1 +gv-simcuda \(state S\): worker of dead PID $OWNER, same process group"
wait_screen a 10 "PID $W2 +gv-simcuda \(state S\): worker of dead PID $OWNER"
wait_screen a 10 "Dry run: 2 processes would get SIGTERM"
wait_screen a 10 'Reclaim plan \(dry run\): GPU 1'
is_dead "$W1" && fail "the dry run ended a worker"
key a Escape
wait_screen a 10 'Dry run' gone
key a x
wait_screen a 10 "GPU 1  Xid 45  .*pid $OWNER gv-simcuda"
key a Escape '?'
wait_screen a 10 '^ +\|   r +reclaim.s plan'
key a Escape s
wait_screen a 10 'sort: pid'

note "resizing to 90x24: the bar follows the width"
"${TM[@]}" resize-window -t a -x 90 -y 24
# 20-cell bar (the figures keep their room): 1 R, then 2 G, 17 free
wait_screen a 10 "^  \[RGG\.{17}\] used 2048/16384 MiB  ghost 2048 MiB"
width=$(screen_of a | awk '{ if (length($0) > m) m = length($0) } END { print m }')
[ "$width" -le 90 ] || fail "a line is $width columns wide after resizing to 90"

note "GPU 1's driver hangs: GPU 1 not inspected, with the reason; GPU 0 still sampled; keys still answer"
"$GV_BIN" sim set "$SIM" hang=1:any
wait_screen a 10 '^GPU 1: (driver did not answer|not inspected)'
key a '?'
wait_screen a 10 'Keys:'
key a Escape
wait_screen a 10 '^GPU 1 .*unknown'
wait_screen a 10 "^  ghost +[_.:=+*#-]*[?]+ "
# a hung call never returns (docs/simulator.md): GPU 1 is not asked again and its hang time
# grows, while the sample itself stays fresh (GPU 0 answers each cycle)
wait_screen a 10 '^GPU 1: not inspected: a call on it has not returned for ([5-9]|[1-9][0-9]) s'
wait_screen a 10 '^sample [0-9:]{8} UTC, [0-2]\.[0-9] s old'
"$GV_BIN" sim set "$SIM" hang=none

note "q quits and leaves the terminal clean"
key a q
clean_after a

note "SIGTERM and SIGQUIT, while the driver hangs, leave the terminal clean too"
"$GV_BIN" sim set "$SIM" hang=any
top_session b 100 30
wait_screen b 10 '^(STALE sample|waiting for the first sample)'
# the wait is counted from the collection's start (each cycle ends at once: "has not returned")
wait_screen b 10 '^waiting for the first sample \(collecting for ([2-9]|[1-9][0-9])\.[0-9] s\)$'
kill -TERM "$(cat "$GV_TMP/b.pid")"
clean_after b
top_session q 100 30
wait_screen q 10 '^(STALE sample|waiting for the first sample)'
kill -QUIT "$(cat "$GV_TMP/q.pid")"
clean_after q
"$GV_BIN" sim set "$SIM" hang=none

note "colour on: the same values, no letters in the bar"
top_session c 140 40
wait_screen c 10 "^  \[ {9}\.{51}\] used 2048/16384 MiB  ghost 2048 MiB \(confirmed\)  reserved 512 MiB apart$"
key c q
clean_after c

note "a monochrome terminal (vt100): letters although NO_COLOR is not set"
top_session m 140 40 TERM=vt100
wait_screen m 10 "^  \[RRGGGGGGG\.{51}\] used 2048/16384 MiB  ghost 2048 MiB \(confirmed\)  reserved 512 MiB apart$"
key m q
clean_after m no-alt

note "TERM=dumb: plain frames with letters"
"${TM[@]}" new-session -d -s d -x 140 -y 40 \
        "env GHOSTVRAM_SIM=$SIM TERM=dumb $GV_BIN top --interval 1s --iterations 2; echo \$? >$GV_TMP/dumb.rc; sleep 600"
wait_until 15 test -s "$GV_TMP/dumb.rc" || fail "top with TERM=dumb did not end after 2 frames"
assert_eq "$(cat "$GV_TMP/dumb.rc")" 0 "exit status with TERM=dumb"
"${TM[@]}" capture-pane -p -S -500 -t d >"$GV_TMP/dumb.out"
grep -q "cannot move the cursor: plain frames follow" "$GV_TMP/dumb.out" || fail "no note about the dumb terminal"
grep -qE "^  \[RRGGGGGGG\.{51}\] used 2048/16384 MiB  ghost 2048 MiB" "$GV_TMP/dumb.out" || fail "no lettered bar: $(cat "$GV_TMP/dumb.out")"
grep -qE "^ +$W1 root +S 1 +- .* worker of dead PID $OWNER" "$GV_TMP/dumb.out" || fail "no worker row with TERM=dumb"
[ "$(grep -c '^ghostvram top  ' "$GV_TMP/dumb.out")" -eq 2 ] || fail "not 2 frames: $(cat "$GV_TMP/dumb.out")"

note "not a terminal: the same frames, no escape sequence"
GHOSTVRAM_SIM=$SIM "$GV_BIN" top --interval 1s --iterations 1 >"$GV_TMP/pipe.out" 2>&1 </dev/null || fail "top into a pipe failed"
grep -qE "^GPU 1 .* orphaned-holders \(high confidence\)$" "$GV_TMP/pipe.out" || fail "no GPU 1 verdict in a pipe"
grep -q $'\e' "$GV_TMP/pipe.out" && fail "escape sequences written into a pipe"
note "--gpu by PCI bus id: only that GPU"
GHOSTVRAM_SIM=$SIM "$GV_BIN" top --gpu 0000:43:00.0 --iterations 1 >"$GV_TMP/gpu.out" 2>&1 </dev/null || fail "top --gpu failed"
grep -qE "^ghostvram top  SIMULATED HOST  GPU 1 " "$GV_TMP/gpu.out" || fail "--gpu 0000:43:00.0 is not GPU 1: $(cat "$GV_TMP/gpu.out")"
grep -q "^GPU 0 " "$GV_TMP/gpu.out" && fail "GPU 0 shown with --gpu naming GPU 1"
grep -qE "^ +$W2 root +S 1 +- .* worker of dead PID $OWNER" "$GV_TMP/gpu.out" || fail "no worker row with --gpu"

note "one figure, one meaning: top's used and ghost of GPU 1 are scan's and the metrics'"
mkdir -p "$GV_TMP/tf"
S=$(GHOSTVRAM_SIM=$SIM "$GV_BIN" scan --json --confirm 300ms --textfile "$GV_TMP/tf") || true
used_b=$(jq '.gpus[1].memory.used_bytes' <<<"$S")
ghost_b=$(jq '.gpus[1].memory.ghost_bytes' <<<"$S")
assert_eq "$used_b $ghost_b" "$((2048 * MIB)) $((2048 * MIB))" "scan's used and ghost of GPU 1"
# prom_kind FILE GPU KIND: the kind's bytes in a metrics file
prom_kind() { awk -v g="gpu=\"$2\"" -v k="kind=\"$3\"" 'index($0, "ghostvram_gpu_memory_used_bytes{") == 1 && index($0, g) && index($0, k) { print $NF }' "$1"; }
assert_eq "$(prom_kind "$GV_TMP/tf/ghostvram.prom" 1 ghost)" "$ghost_b" "the ghost metric"
sum=0
for k in listed foreign ghost unattributed freeing; do sum=$((sum + $(prom_kind "$GV_TMP/tf/ghostvram.prom" 1 $k))); done
assert_eq "$sum" "$used_b" "the kinds' sum is scan's used"
GHOSTVRAM_SIM=$SIM "$GV_BIN" top --iterations 1 >"$GV_TMP/fig.out" 2>&1 </dev/null || fail "top failed"
grep -qE "\] used $((used_b / MIB))/16384 MiB  ghost $((ghost_b / MIB)) MiB \(confirmed\)  reserved 512 MiB apart$" "$GV_TMP/fig.out" ||
        fail "top's figures are not scan's: $(grep -A1 '^GPU 1' "$GV_TMP/fig.out")"

note "a draining GPU: freeing everywhere, never ghost, never 'every byte accounted for'"
"$GV_BIN" sim set "$SIM" free_delay_ms_per_gib=60000 >/dev/null
sim_run --gpu 0 --mib 1024
kill_wait "$OWNER"
# (the second frame has two samples: the fall shows)
GHOSTVRAM_SIM=$SIM "$GV_BIN" top --interval 1s --iterations 2 >"$GV_TMP/drain.out" 2>&1 </dev/null || fail "top failed"
frame=$(awk '/^ghostvram top/ { n++ } n == 2' "$GV_TMP/drain.out")
grep -qE '^GPU 0 .* freeing \(medium confidence\)$' <<<"$frame" || fail "top: GPU 0 not freeing: $frame"
line=$(grep -A1 '^GPU 0 ' <<<"$frame" | tail -1)
[[ $line =~ ^\ \ \[R~+\.+\]\ used\ ([0-9]+)/16384\ MiB\ \ ghost\ 0\ MiB\ \ freeing\ ([0-9]+)\ MiB\ \ reserved\ 512\ MiB\ apart$ ]] ||
        fail "top's bar during the teardown: '$line'"
assert_eq "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}" "top: all of used is freeing"
S=$(GHOSTVRAM_SIM=$SIM "$GV_BIN" scan --json --confirm 300ms --textfile "$GV_TMP/tf") || true
assert_eq "$(jq -r '.gpus[0].verdict' <<<"$S")" freeing "scan's verdict"
assert_eq "$(jq '.gpus[0].memory.ghost_bytes' <<<"$S")" 0 "no ghost bytes during a teardown"
assert_eq "$(jq '.gpus[0].memory.freeing_bytes == .gpus[0].memory.used_bytes and .gpus[0].memory.used_bytes > 0' <<<"$S")" true \
        "freeing_bytes is the used memory"
assert_eq "$(prom_kind "$GV_TMP/tf/ghostvram.prom" 0 ghost)" 0 "kind=ghost during a teardown"
[ "$(prom_kind "$GV_TMP/tf/ghostvram.prom" 0 freeing)" -gt 0 ] || fail "no kind=freeing bytes during a teardown"
T=$(GHOSTVRAM_SIM=$SIM "$GV_BIN" scan --gpu 0 --confirm 300ms) || true
grep -qE '^  used [0-9]+ MiB = listed 0 MiB \+ foreign 0 MiB \+ ghost 0 MiB \+ unattributed 0 MiB \+ freeing [0-9]+ MiB$' <<<"$T" ||
        fail "the equation has no freeing term: $T"
grep -q "every byte accounted for" <<<"$T" && fail "'every byte accounted for' during a teardown: $T"
C=$(GHOSTVRAM_SIM=$SIM "$GV_BIN" check --confirm 300ms --gpu 0) || true
grep -qE "^GHOSTVRAM OK - GPU 0: [0-9]+ MiB freeing \(the driver is releasing it; not a ghost\) \| .*'gpu0_freeing'=[1-9][0-9]*B" <<<"$C" ||
        fail "check during a teardown: $C"
"$GV_BIN" sim set "$SIM" free_delay_ms_per_gib=0 >/dev/null

note "no driver: top says it once"
env -u GHOSTVRAM_SIM "$GV_BIN" top --iterations 1 --nvml-lib "$GV_TMP/none/libnvidia-ml.so.1" >"$GV_TMP/nodrv.out" 2>&1 </dev/null ||
        fail "top without a driver failed: $(cat "$GV_TMP/nodrv.out")"
assert_eq "$(grep -c "libnvidia-ml.so.1" "$GV_TMP/nodrv.out")" 1 "lines saying there is no driver: $(cat "$GV_TMP/nodrv.out")"

note "acting from top: A needs a plan and a y; then reclaim ends the workers and the memory comes back"
# (in a UTF-8 locale: reclaim's "→" is shown as such, not as one '?' a byte)
top_session e 140 40 NO_COLOR=1 LANG=C.UTF-8
wait_screen e 10 "^  \[RRGGGGGGG\.{51}\] used 2048/16384 MiB  ghost 2048 MiB \(confirmed\)  reserved 512 MiB apart$"
key e A
wait_screen e 10 "^A acts on reclaim.s plan: press r first"
key e r
wait_screen e 10 "Dry run: 2 processes would get SIGTERM"
wait_screen e 10 'Reclaim plan \(dry run\): every GPU'
key e A
wait_screen e 10 "^Act on a fresh plan: end the processes it names\? y: yes, any other key: no"
key e n
wait_screen e 10 "^nothing done"
is_dead "$W1" && fail "a worker ended although the confirmation was refused"
key e A
wait_screen e 10 "^Act on a fresh plan"
key e y
wait_screen e 10 'Reclaim \(acting\): every GPU'
wait_screen e 30 'ghostvram reclaim --yes exited 0\)'
wait_screen e 10 "GPU 1  2048 MiB → 0 MiB  freed 2048 MiB"
no_screen e '\?\?\?'
for w in "$W1" "$W2"; do wait_until 10 is_dead "$w" || fail "worker $w still alive after reclaim from top"; done
key e Escape
wait_screen e 15 '^GPU 1 .* ok \(high confidence\)$'
wait_screen e 10 "^  \[RR\.{58}\] used 0/16384 MiB  ghost 0 MiB  reserved 512 MiB apart$"
key e q
clean_after e
echo "PASS"
