#!/usr/bin/env bash
# The help in Chinese (docs/i18n.md): `ghostvram --help`, `ghostvram help CMD` and `CMD --help`
# of every command `--help` lists, and the sim and xid subcommands' help, under LANGUAGE=zh_CN:
# exit 0; Chinese on most lines that have words (3 in 4, example commands and sim set's
# generated knob list apart); every line at most 80 display columns (a CJK
# character is 2 wide: east_asian_width W or F); the same options (--xxx) as the English help;
# every option line's option and metavariables byte for byte, its description in the same
# column. The English help stays English (no CJK character), also under LANGUAGE=zh_CN LC_ALL=C.
. "$(dirname "$0")/lib.sh"

cmds=$("$GV_BIN" --help | sed -n 's/^  \([a-z][a-z]*\) .*/\1/p')
[ "$(wc -l <<<"$cmds")" -ge 13 ] || fail "commands from --help: $cmds"

# compare NAME EN ZH: the checks above on one help, English in file EN, Chinese in file ZH;
# the lines of sim set's knob list (made from the simulator's table, left English) are skipped
compare() {
        python3 - "$@" <<'EOF'
import re, sys, unicodedata
name, en_path, zh_path = sys.argv[1:4]
en = open(en_path, encoding="utf-8").read().split("\n")
zh = open(zh_path, encoding="utf-8").read().split("\n")
errs = []
def width(s):
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in s)
def cjk(s):
    return any(unicodedata.east_asian_width(c) in "WF" and c.isalpha() for c in s)
if any(cjk(l) for l in en):
    errs.append("the English help has a CJK character")
if len(zh) < 3:
    errs.append("no help")
generated = set()
if name in ("sim set --help", "help sim set"):
    # from the English "Knobs:" to "Examples:": the simulator's own list, verbatim in both
    i, j = en.index("Knobs:"), en.index("Examples:")
    generated = {l for l in en[i + 1:j] if l.strip()}
    if not generated & set(zh):
        errs.append("the knob list is missing")
# an example's command line (kept as it is) is no sentence
command = re.compile(r"^ +(sudo |ghostvram |GHOSTVRAM_SIM=|kill |journalctl |dmesg |curl |jq |torchrun |--exec )")
wordy = [l for l in zh if l not in generated and not command.match(l)
         and re.search(r"[A-Za-z]{2,} [A-Za-z]{2,}|[\u4e00-\u9fff]", l)]
chinese = [l for l in wordy if cjk(l)]
share = len(chinese) / max(len(wordy), 1)
if share < 0.75:
    errs.append("%d of %d lines with words are Chinese (%.0f%%, want 75%% or more); English: %s"
                % (len(chinese), len(wordy), 100 * share, [l for l in wordy if not cjk(l)][:5]))
for l in zh:
    if width(l) > 80:
        errs.append("%d columns: %s" % (width(l), l))
opts = lambda lines: {o for l in lines for o in re.findall(r"--[a-z][a-z0-9-]*", l)}
if opts(en) != opts(zh):
    errs.append("options only in English: %s; only in Chinese: %s"
                % (sorted(opts(en) - opts(zh)), sorted(opts(zh) - opts(en))))
# an option line: "  -x, --opt META" or "  --opt META" (metavariables in capitals), the
# description after it or on the next lines; its head byte for byte and its description's column as in English
def heads(lines):
    out = {}
    for l in lines:
        m = re.match(r"^  (-[^ ]*(?:,? -[^ ]*)?(?: [A-Z][^ ]*)*)(?: +(\S)|$)", l)
        if m and l not in generated:
            out[m.group(1)] = width(l[:m.start(2)]) if m.group(2) else None
    return out
he, hz = heads(en), heads(zh)
if set(he) != set(hz):
    errs.append("option lines only in English: %s; only in Chinese: %s"
                % (sorted(set(he) - set(hz)), sorted(set(hz) - set(he))))
for h in set(he) & set(hz):
    if he[h] != hz[h]:
        errs.append("%s: description at column %s, in English %s" % (h, hz[h], he[h]))
for e in errs:
    print("%s: %s" % (name, e))
sys.exit(1 if errs else 0)
EOF
}

# zh ARGS...: ghostvram in Chinese (lib.sh sets the C locale's messages, which would mean English)
zh() { env -u LC_ALL -u LC_MESSAGES -u LANG LANGUAGE=zh_CN "$GV_BIN" "$@"; }

bad=0 n=0
# check WHAT ARGS...: the help ARGS print, in English and in Chinese
check() {
        local what=$1 rc=0
        shift
        "$GV_BIN" "$@" >"$GV_TMP/en" 2>&1 || rc=$?
        assert_eq "$rc" 0 "$what (English): exit status"
        rc=0
        zh "$@" >"$GV_TMP/zh" 2>&1 || rc=$?
        assert_eq "$rc" 0 "$what (LANGUAGE=zh_CN): exit status"
        env LANGUAGE=zh_CN LC_ALL=C "$GV_BIN" "$@" >"$GV_TMP/c" 2>&1 || true
        cmp -s "$GV_TMP/en" "$GV_TMP/c" || fail "$what: LANGUAGE=zh_CN LC_ALL=C is not the English help"
        compare "$what" "$GV_TMP/en" "$GV_TMP/zh" || bad=$((bad + 1))
        n=$((n + 1))
}

check "ghostvram --help" --help
for cmd in $cmds; do
        check "help $cmd" help "$cmd"
        check "$cmd --help" "$cmd" --help
done
for sub in init run set status; do
        check "sim $sub --help" sim "$sub" --help
        check "help sim $sub" help sim "$sub"
done
check "xid explain --help" xid explain --help
check "help xid explain" help xid explain
[ "$bad" -eq 0 ] || fail "$bad of $n helps fail (above)"
[ "$n" -ge 37 ] || fail "only $n helps checked"

note "the words of the translation, the figures and codes kept"
out=$(zh scan --help)
grep -Fx "用法：ghostvram scan [选项]" <<<"$out" >/dev/null || fail "scan --help: no Chinese usage line"
grep -Fx "  -h, --help           显示本帮助" <<<"$out" >/dev/null || fail "scan --help: no Chinese -h line"
grep -F "残留" <<<"$out" >/dev/null || fail "scan --help: no 残留"
# the generated verdict list, the example commands and the exit codes stay as they are
for code in orphaned-holders stuck-in-driver gpu-lost; do
        grep -F "$code" <<<"$out" >/dev/null || fail "scan --help: verdict $code missing"
done
grep -Fx "    jq '.gpus[] | {index, verdict, ghost: .memory.ghost_bytes}'" <<<"$out" >/dev/null ||
        fail "scan --help: the jq example changed"
grep -F "退出状态：0 没有残留；1 " <<<"$out" >/dev/null || fail "scan --help: exit status not in Chinese"
# the values formatted into a translation: check's default ranges, track's paths, watch's limit
out=$(zh check --help)
grep -F "（默认 0：任何已确认的残留）" <<<"$out" >/dev/null || fail "check --help: -w default"
grep -F "（默认 1024：残留超过 1 GiB）" <<<"$out" >/dev/null || fail "check --help: -c default"
grep -F "GHOSTVRAM WARNING - GPU 1: 2048 MiB ghost (orphaned-holders, PIDs 31301" <<<"$out" >/dev/null ||
        fail "check --help: the example status line changed"
out=$(zh track --help)
grep -F "（默认 /run/ghostvram/ledger；" <<<"$out" >/dev/null || fail "track --help: the ledger directory"
grep -F "libghostvram-track.so" <<<"$out" >/dev/null || fail "track --help: the tracker library"
en_n=$("$GV_BIN" watch --help | sed -n 's/.*at most \([0-9][0-9]*\) per hour.*/\1/p')
[ -n "$en_n" ] || fail "watch --help: no reclaims per hour in English"
zh watch --help | grep -F "每小时总共最多 $en_n 次" >/dev/null || fail "watch --help: not $en_n reclaims per hour"
out=$(zh sim set --help)
grep -Fx "旋钮：" <<<"$out" >/dev/null || fail "sim set --help: no Chinese heading of the knobs"
grep -F "  driver=VARIANT" <<<"$out" >/dev/null || fail "sim set --help: the knob list is missing"
echo PASS
