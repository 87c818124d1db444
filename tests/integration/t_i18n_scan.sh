#!/usr/bin/env bash
# scan and check in Chinese (docs/i18n.md) on the classic ghost (a killed owner whose workers
# keep its memory): the sentences are Chinese, every figure and PID is the English run's, in the
# same order; --json is the English document byte for byte; check's status prefix, its exit
# status and its performance data are the same in every language.
. "$(dirname "$0")/lib.sh"

# (lib.sh sets the C locale's messages for every test: a C locale named means English)
zh() { env -u LC_ALL -u LC_MESSAGES -u LANG LANGUAGE=zh_CN GHOSTVRAM_SIM="$SIM" "$GV_BIN" "$@"; }
en() { GHOSTVRAM_SIM="$SIM" "$GV_BIN" "$@"; }
# run FN ARGS...: OUT gets the output (stdout and stderr), RC the exit status
run() { set +e; OUT=$("$@" 2>&1); RC=$?; set -e; }
# the numbers of a text, one a line, in order (PIDs, MiB, GPU indexes, the sim's path)
numbers() { grep -oE '[0-9]+' <<<"$1" || true; }
# a JSON document without the fields that differ from one run to the next: when it was made,
# how many processes the host had
untimed() {
        jq -S 'walk(if type == "object" then with_entries(select(.key | test("^((.*_)?time(_epoch)?|processes_scanned)$") | not)) else . end)' <<<"$1"
}
has() { # TEXT WORDS WHAT
        grep -F -- "$2" >/dev/null <<<"$1" || fail "$3: no '$2' in: $1"
}
hasnt() {
        if grep -F -- "$2" >/dev/null <<<"$1"; then fail "$3: '$2' in: $1"; fi
}

sim_new --gpus 2 --memory 16384 --reserved 512
sim_run --gpu 1 --mib 1024 --workers 2
kill_wait "$OWNER"
W1=${WORKERS[0]} W2=${WORKERS[1]}

note "scan: Chinese sentences, the English run's figures"
# the Chinese run between two English ones with the same figures: what the host's other
# processes are doing (one in D state, the limits of the result) may change in between, and is
# sampled again, at most 3 times
for try in 1 2 3; do
        run en scan --confirm 300ms --verbose
        EN=$OUT EN_RC=$RC
        run zh scan --confirm 300ms --verbose
        ZH=$OUT RC_ZH=$RC
        run en scan --confirm 300ms --verbose
        [ "$(numbers "$OUT")" != "$(numbers "$EN")" ] || break
        note "the host changed between two English runs (try $try)"
done
RC=$RC_ZH
assert_eq "$RC" "$EN_RC" "exit status in Chinese"
assert_eq "$RC" 1 "a confirmed ghost"
has "$EN" "1024 MiB ghost held by 2 orphaned processes of a dead job" "English headline"
has "$EN" "worker of dead PID $OWNER, same process group" "English link"
has "$ZH" "orphaned-holders  残留 1024 MiB，由一个已死作业的 2 个孤儿进程持有  [置信度：高]" "Chinese headline (the code stays)"
has "$ZH" "已用 1024 MiB = 已列出 0 MiB + 外部 0 MiB + 残留 1024 MiB + 未归属 0 MiB" "Chinese ledger line"
has "$ZH" "（驱动预留 512 MiB 另计；总量 16384 MiB）" "Chinese reservation"
has "$ZH" "— 已死 PID $OWNER 的工作进程，同一进程组" "Chinese link of each worker"
has "$ZH" "NVML 列出 PID $OWNER，占 1024 MiB：" "Chinese evidence"
has "$ZH" "下一步：" "Chinese next-step label"
has "$ZH" "\`sudo ghostvram reclaim --gpu 1\` 显示计划，加 --yes 执行（手动：kill -TERM $W1 $W2）" "the command kept byte for byte"
has "$ZH" "NVIDIA 设备节点的其他持有者" "Chinese verbose holders"
hasnt "$ZH" "orphaned processes" "an English sentence left in Chinese"
hasnt "$ZH" "held by" "an English sentence left in Chinese"
assert_eq "$(numbers "$ZH")" "$(numbers "$EN")" "scan's numbers and PIDs, in order"
# the zombie may be reaped between the runs: both say which PIDs, whatever its state
has "$(numbers "$ZH")" "$OWNER" "the dead owner's PID"

note "scan --json: English in every language"
# the Chinese run between two English ones that agree (a host that changed in between, a
# zombie reaped, is sampled again, at most 3 times)
for try in 1 2 3; do
        run en scan --json --confirm 300ms
        EN_J=$(untimed "$OUT") EN_RC=$RC
        run zh scan --json --confirm 300ms
        ZH_J=$(untimed "$OUT") ZH_RC=$RC
        run en scan --json --confirm 300ms
        [ "$(untimed "$OUT")" != "$EN_J" ] || break
        note "the host changed between two English runs (try $try)"
done
assert_eq "$ZH_RC" "$EN_RC" "--json exit status in Chinese"
assert_eq "$ZH_J" "$EN_J" "--json under LANGUAGE=zh_CN"
assert_eq "$(jq -r '.gpus[] | select(.index == 1) | .findings[0].summary' <<<"$OUT")" \
        "1024 MiB ghost held by 2 orphaned processes of a dead job" "the JSON summary is English"
run zh scan --json --gpu 7
# with --json the whole process speaks English, its errors too
assert_eq "$OUT" "ghostvram scan: --gpu 7: this host has 2 GPUs" "--gpu 7 --json under LANGUAGE=zh_CN"
assert_eq "$RC" 2 "--gpu 7 --json"

note "scan's errors in Chinese"
run zh scan --gpu 7
assert_eq "$RC" 2 "--gpu 7 in Chinese"
has "$OUT" "--gpu 7：本机只有 2 块 GPU" "Chinese error"
run zh scan --noise-floor x
has "$OUT" "--noise-floor：'x' 不是 MiB 数" "Chinese option error"

note "check: the prefix and the performance data stay, the sentence is Chinese"
run en check --confirm 300ms
EN=$OUT EN_RC=$RC
run zh check --confirm 300ms
ZH=$OUT
assert_eq "$RC" "$EN_RC" "check's exit status in Chinese"
assert_eq "$RC" 1 "WARNING"
en1=$(head -n 1 <<<"$EN") zh1=$(head -n 1 <<<"$ZH")
assert_eq "${zh1%% - *}" "GHOSTVRAM WARNING" "the status prefix"
assert_eq "${zh1%% - *}" "${en1%% - *}" "the status prefix in both languages"
assert_eq "${zh1#* | }" "${en1#* | }" "the performance data in both languages"
has "$en1" "GPU 1: 1024 MiB ghost (orphaned-holders, PIDs " "English status"
has "$zh1" "GHOSTVRAM WARNING - GPU 1: 残留 1024 MiB (orphaned-holders, PID " "Chinese status"
has "$zh1" "; 1 块 GPU 正常 | 'gpu0_ghost'=0B;" "Chinese count of the GPUs that are OK"
has "$ZH" "GPU 1 orphaned-holders: 残留 1024 MiB，由一个已死作业的 2 个孤儿进程持有。下一步：安全地释放" "Chinese long output"
assert_eq "$(numbers "$ZH")" "$(numbers "$EN")" "check's numbers and PIDs, in order"
for p in "$OWNER" "$W1" "$W2"; do has "${zh1%% | *}" " $p" "PID $p in the Chinese status"; done

note "check's UNKNOWN in Chinese"
run zh check --gpu 7
assert_eq "$RC" 3 "UNKNOWN"
assert_eq "$OUT" "GHOSTVRAM UNKNOWN - --gpu 7：本机只有 2 块 GPU" "Chinese UNKNOWN"
run en check --gpu 7
assert_eq "$OUT" "GHOSTVRAM UNKNOWN - --gpu 7: this host has 2 GPUs" "English UNKNOWN"
run zh check --json
assert_eq "$RC" 3 "check --json"
# --json makes the process English before check can refuse it (main, cli_wants_json)
assert_eq "$OUT" "GHOSTVRAM UNKNOWN - check prints a plugin status line; use 'ghostvram scan --json' for JSON" "--json refused, in English"
run zh check -t 0
assert_eq "$RC" 3 "check -t 0"
assert_eq "$OUT" "GHOSTVRAM UNKNOWN - -t：'0' 不是不超过 3600 的秒数" "Chinese usage error"

note "not root, in Chinese: what the result could not see is said in Chinese; --json and a saved bundle keep it English"
nobody_copy "$GV_BUILD/locale"
chmod -R a+rX "$SIM"
nb() { # LANG-ARGS... -- ghostvram's ARGS...: as nobody
        local e=()
        while [ "$1" != -- ]; do e+=("$1"); shift; done
        shift
        set +e
        OUT=$(env -u LC_ALL -u LC_MESSAGES -u LANG "${e[@]}" GHOSTVRAM_LOCALEDIR="$NOBODY_DIR/locale" GHOSTVRAM_SIM="$SIM" \
                setpriv --reuid=65534 --regid=65534 --clear-groups "$NOBODY_BIN" "$@" 2>&1)
        RC=$?
        set -e
}
nb LANGUAGE=zh_CN -- scan --confirm 300ms
assert_eq "$RC" 1 "the ghost is confirmed all the same"
has "$OUT" "此结果的局限：" "the limits' heading"
has "$OUT" "的内存映射（非 root）" "a limit in Chinese"
hasnt "$OUT" "could not be read" "an English limit"
nb LANGUAGE=zh_CN -- scan --confirm 300ms --json
jq -r '.limits[]' <<<"$OUT" | grep -E "^memory maps of [0-9]+ process(es)? owned by other users could not be read \(not root\)$" >/dev/null ||
        fail "the JSON's limits in English: $(jq -c .limits <<<"$OUT")"
B="$GV_TMP/nobody/bundle"
mkdir -m 777 "$B"
nb LANGUAGE=zh_CN -- scan --confirm 300ms --save-bundle "$B"
has "$OUT" "此结果的局限：" "the limits' heading while a bundle is saved"
jq -r '.limits[]' "$B/host.json" | grep -F "owned by other users could not be read (not root)" >/dev/null ||
        fail "the bundle's limits in English: $(jq -c .limits "$B/host.json")"
hasnt "$(cat "$B/host.json")" "非 root" "a Chinese limit in the bundle"

echo PASS
