#!/usr/bin/env bash
# One command line: --gpu takes an index, a UUID or a PCI bus id in scan, check, watch, reclaim and
# doctor (one parser, cli/common.c); a GPU the host lacks is a usage error everywhere, watch
# included; an unknown option is one line naming it and a hint; TERM=dumb means no colour.
. "$(dirname "$0")/lib.sh"
need_tool jq jq

sim_new --gpus 2
snap=$(GHOSTVRAM_SIM="$SIM" "$GV_BIN" snapshot --json)
uuid=$(jq -r '.gpus[1].uuid' <<<"$snap"); pci=$(jq -r '.gpus[1].pci_bus_id' <<<"$snap")
[[ $uuid == GPU-* ]] || fail "uuid: $uuid"
gv() { GHOSTVRAM_SIM="$SIM" "$GV_BIN" "$@"; }

note "scan: one GPU by each of its names"
for spec in 1 "$uuid" "$pci" "${pci^^}" "${pci#0000:}"; do
        rc=0; out=$(gv scan --json --confirm 0 --gpu "$spec") || rc=$?
        assert_eq "$rc" 0 "scan --gpu $spec"
        assert_eq "$(jq -c '[.gpus[] | select(.shown != false) | .index]' <<<"$out" 2>/dev/null || true)" \
                "$(jq -c '[.gpus[] | select(.shown != false) | .index]' <<<"$(gv scan --json --confirm 0 --gpu 1)")" "scan --gpu $spec = --gpu 1"
done
gv scan --confirm 0 --gpu "$uuid" | grep -q "^GPU 1" || fail "scan --gpu UUID shows GPU 1: $(gv scan --confirm 0 --gpu "$uuid")"
gv scan --confirm 0 --gpu "$uuid" | grep -q "^GPU 0" && fail "scan --gpu UUID shows GPU 0 too"

note "check: the plugin line is about that GPU only"
"$GV_BIN" sim set "$SIM" uncharged_mib=0:100 >/dev/null
rc=0; out=$(gv check --confirm 0 --gpu "$pci") || rc=$?
assert_eq "$rc" 0 "check --gpu PCI"
grep -q "gpu0" <<<"$out" && fail "check --gpu $pci reports GPU 0: $out"
rc=0; out=$(gv check --confirm 0 --gpu GPU-00000000-0000-0000-0000-000000000000) || rc=$?
assert_eq "$rc" 3 "check with an unknown UUID is UNKNOWN"
grep -q "no such GPU" <<<"$out" || fail "check: $out"

note "--gpu 99 is the same usage error in every command; a UUID is accepted"
for cmd in scan watch top reclaim doctor xid experiment; do
        rc=0
        case $cmd in
        scan) gv scan --gpu 99 --confirm 0 ;;
        watch) gv watch --gpu 99 --count 1 ;;
        top) GHOSTVRAM_SIM="$SIM" timeout 20 "$GV_BIN" top --gpu 99 --batch --iterations 1 </dev/null ;;
        xid) gv xid --gpu 99 --kmsg "$GV_SRC/tests/fixtures/kmsg/dmesg.txt" --this-boot ;;
        *) gv $cmd --gpu 99 ;;
        esac >/dev/null 2>"$GV_TMP/err" || rc=$?
        assert_eq "$rc" 2 "$cmd --gpu 99"
        grep -q -- "--gpu 99: this host has 2 GPUs" "$GV_TMP/err" || fail "$cmd --gpu 99: $(cat "$GV_TMP/err")"
done
rc=0; gv watch --gpu "$uuid" --count 1 --interval 1s --json >"$GV_TMP/w.json" 2>&1 || rc=$?
assert_eq "$rc" 0 "watch --gpu UUID --count 1"
rc=0; gv watch --gpu banana --count 1 2>/dev/null || rc=$?
assert_eq "$rc" 2 "watch --gpu banana"

note "xid: a bus id the driver does not list is kept (a GPU off the bus keeps its events), and said"
out=$(gv xid --gpu 0000:99:00.0 --kmsg "$GV_SRC/tests/fixtures/kmsg/dmesg.txt" --this-boot) || fail "xid --gpu bus id: exit $?"
grep -q "No GPU the driver lists now is at 0000:99:00.0" <<<"$out" || fail "xid: $out"
out=$(gv xid --gpu "$pci" --kmsg "$GV_SRC/tests/fixtures/kmsg/dmesg.txt" --this-boot)
grep -q "No GPU the driver lists" <<<"$out" && fail "xid --gpu $pci: $out"

note "reclaim: a dry run for a GPU named by UUID"
rc=0; gv reclaim --gpu "$uuid" --json >"$GV_TMP/r.json" || rc=$?
assert_eq "$rc" 0 "reclaim --gpu UUID (nothing to do)"
rc=0; gv reclaim --gpu 0000:ff:00.0 2>"$GV_TMP/err" >/dev/null || rc=$?
assert_eq "$rc" 2 "reclaim --gpu of another host"

note "an unknown option: one line and a hint, in every command"
for cmd in scan snapshot watch serve xid reclaim experiment top doctor track; do
        rc=0; "$GV_BIN" $cmd --no-such-option >"$GV_TMP/out" 2>"$GV_TMP/err" || rc=$?
        assert_eq "$rc" 2 "$cmd --no-such-option"
        assert_eq "$(cat "$GV_TMP/err")" "ghostvram $cmd: unknown option '--no-such-option'; see 'ghostvram help $cmd'" "$cmd's line"
        [ -s "$GV_TMP/out" ] && [ "$cmd" != reclaim ] && fail "$cmd printed to stdout: $(cat "$GV_TMP/out")"
done
rc=0; "$GV_BIN" scan --call-timeout 2>"$GV_TMP/err" || rc=$?
assert_eq "$(cat "$GV_TMP/err")" "ghostvram scan: option '--call-timeout' needs a value; see 'ghostvram help scan'" "missing value"
rc=0; "$GV_BIN" scan -z 2>"$GV_TMP/err" || rc=$?
assert_eq "$rc" 2 "scan -z"
assert_eq "$(cat "$GV_TMP/err")" "ghostvram scan: option '-z' is unknown or needs a value; see 'ghostvram help scan'" "a short option"

note "TERM=dumb: no colour on a terminal"
need_tool script bsdutils
"$GV_BIN" sim set "$SIM" persistence=0:off >/dev/null
TERM=xterm GHOSTVRAM_SIM="$SIM" script -qec "$GV_BIN doctor" /dev/null >"$GV_TMP/tty.out" || true
grep -q $'\033\[' "$GV_TMP/tty.out" || fail "no colour on a terminal with TERM=xterm (the check cannot fail otherwise)"
TERM=dumb GHOSTVRAM_SIM="$SIM" script -qec "$GV_BIN doctor" /dev/null >"$GV_TMP/tty.out" || true
grep -q 'persistence-off' "$GV_TMP/tty.out" || fail "doctor printed nothing under script"
grep -q $'\033\[' "$GV_TMP/tty.out" && fail "colour with TERM=dumb"
echo PASS
