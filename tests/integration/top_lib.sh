# top_lib.sh: ghostvram top under tmux (source it after lib.sh, with SIM set): a session per
# name, its screen read whole, waits for a line, keys, and the terminal's state after top.
command -v tmux >/dev/null || fail "tmux is missing: scripts/install-deps --test installs it"

TM=(tmux -u -S "$GV_TMP/tmux.sock" -f /dev/null)  # -u: the panes are UTF-8
gv_on_exit '"${TM[@]}" kill-server 2>/dev/null'

# top_session NAME COLS ROWS ENV...: run top in a tmux session; when it ends the pane records
# its exit status and the terminal's modes in $GV_TMP/NAME.rc, then NAME.stty (renamed into
# place once complete). $GV_TMP/NAME.pid gets top's PID.
top_session() {
        local name=$1 cols=$2 rows=$3
        shift 3
        "${TM[@]}" new-session -d -s "$name" -x "$cols" -y "$rows" \
                "sh -c 'echo \$\$ >$GV_TMP/$name.pid; exec env GHOSTVRAM_SIM=$SIM $* $GV_BIN top --interval 1s --call-timeout 1s ${TOP_ARGS:-}'; \
                 echo \"EXITED rc=\$?\" >$GV_TMP/$name.rc; stty -a >$GV_TMP/$name.stty.part; mv $GV_TMP/$name.stty.part $GV_TMP/$name.stty; echo AFTER-TOP; sleep 600"
        wait_until 10 test -s "$GV_TMP/$name.pid" || fail "top did not start"
        track "$(cat "$GV_TMP/$name.pid")"
}
# (a screen is read whole before it is matched: 140x40 is more than one write, and grep -q
# quitting early would fail the pipe under pipefail)
screen_of() { "${TM[@]}" capture-pane -p -t "$1"; }
# wait_screen NAME SECONDS ERE [gone]: until the screen has a line matching ERE (with "gone":
# until no line does)
wait_screen() {
        local end=$((SECONDS + $2)) want=0
        [ "${4:-}" = gone ] && want=1
        until [ "$(screen_of "$1" | grep -cE -- "$3" || true)" -eq 0 ] && [ $want = 1 ] ||
                { [ $want = 0 ] && grep -qE -- "$3" <<<"$(screen_of "$1")"; }; do
                [ "$SECONDS" -lt "$end" ] || { screen_of "$1" >&2; fail "screen of $1: '$3' ${4:-not found}"; }
                sleep 0.1
        done
}
no_screen() { # NAME ERE: no line matches now
        ! grep -qE -- "$2" <<<"$(screen_of "$1")" || { screen_of "$1" >&2; fail "a line matches '$2' on $1"; }
}
key() { "${TM[@]}" send-keys -t "$1" "${@:2}"; }
# the terminal is clean after top: its screen gone (where the terminal has an alternate screen;
# not with "no-alt": vt100 has none, the last frame stays as with any program), canonical mode
# and echo back
clean_after() {
        # (a bound for a loaded machine: a top that hangs on exit never writes the status)
        wait_until 10 test -s "$GV_TMP/$1.rc" || fail "top did not exit within 10 s"
        assert_eq "$(cat "$GV_TMP/$1.rc")" "EXITED rc=0" "top's exit status"
        if [ "${2:-}" != no-alt ]; then
                wait_screen "$1" 10 '^AFTER-TOP$'
                no_screen "$1" 'ghostvram top|worker of dead PID'
        fi
        # the pane writes the status before it runs stty
        wait_until 10 test -s "$GV_TMP/$1.stty" || fail "no terminal modes recorded after top"
        grep -qE '(^|[ ;])icanon( |$)' "$GV_TMP/$1.stty" || fail "tty left without icanon: $(cat "$GV_TMP/$1.stty")"
        grep -qE '(^|[ ;])echo( |$)' "$GV_TMP/$1.stty" || fail "tty left without echo"
}

