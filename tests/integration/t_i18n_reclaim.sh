#!/usr/bin/env bash
# reclaim in the reader's language (docs/i18n.md) on the classic ghost (a killed job's two
# workers hold GPU 1): under LANGUAGE=zh_CN the dry run and --yes print Chinese sentences with
# the same PIDs and MiB figures as in English and exit with the same status; --json is the
# English document byte for byte.
. "$(dirname "$0")/lib.sh"

# reclaim ARGS...: in English (lib.sh's C messages); zh_reclaim: in Chinese
reclaim() { GHOSTVRAM_SIM="$SIM" "$GV_BIN" reclaim --confirm 300ms "$@" </dev/null; }
zh_reclaim() {
        env -u LC_ALL -u LC_MESSAGES -u LANG LANGUAGE=zh_CN GHOSTVRAM_SIM="$SIM" "$GV_BIN" reclaim --confirm 300ms "$@" </dev/null
}
# run NAME CMD...: CMD's stdout in OUT_NAME, its exit status in RC_NAME
run() {
        local name=$1 out rc
        shift
        set +e
        out=$("$@" 2>&1)
        rc=$?
        set -e
        printf -v "OUT_$name" '%s' "$out"
        printf -v "RC_$name" '%s' "$rc"
}
# the whole numbers of a text, one per line, sorted (times, with a decimal point, are left out:
# they differ from run to run); PIDs of the job as their roles, the host's directory as SIM
figures() {
        local t=$1 role
        t=${t//"$SIM"/SIM} # the simulated host's directory in the banner
        # a memory line each second while it comes back: how many depends on the machine's load
        t=$(grep -vE 'MiB expected back\)$|（预期收回 [0-9]+ MiB）$' <<<"$t" || true)
        for role in "${!ROLES[@]}"; do t=$(sed -E "s/(^|[^0-9])${ROLES[$role]}([^0-9]|$)/\1$role\2/g" <<<"$t"); done
        sed -E 's/[0-9]+\.[0-9]+//g' <<<"$t" | grep -oE '[0-9]+|owner|worker[12]' | sort | tr '\n' ' '
}
has() { grep -F -- "$2" >/dev/null <<<"$1" || fail "no '$2' in: $1"; }
hasnt() { ! grep -F -- "$2" >/dev/null <<<"$1" || fail "'$2' in: $1"; }

# ghost: a fresh classic ghost on GPU 1 of 2; sets ROLES (role -> PID)
declare -A ROLES
ghost() {
        sim_new --gpus 2 --memory 16384 --reserved 512
        sim_run --gpu 1 --mib 1536 --workers 2
        ROLES=([owner]=$OWNER [worker1]=${WORKERS[0]} [worker2]=${WORKERS[1]})
        kill_wait "$OWNER"
        assert_eq "$(used 1)" $((1536 * MIB)) "the ghost holds GPU 1"
}

note "the dry run in Chinese: the same PIDs and figures, the same exit status"
ghost
run en reclaim
run zh zh_reclaim
assert_eq "$RC_zh" "$RC_en" "dry run's exit status"
assert_eq "$RC_en" 0 "dry run's exit status"
has "$OUT_en" "Dry run: 2 processes would get SIGTERM (SIGKILL after 5 s). Run again with --yes."
has "$OUT_zh" "计划（演练：不加 --yes 不会发送任何信号）："
has "$OUT_zh" "已用 1536 MiB，残留 1536 MiB（已确认）"
has "$OUT_zh" "PID ${WORKERS[0]}"
has "$OUT_zh" "演练：2 个进程将收到 SIGTERM（5 秒后 SIGKILL）。加上 --yes 再运行一次。"
hasnt "$OUT_zh" "Dry run"
hasnt "$OUT_zh" "would get"
assert_eq "$(figures "$OUT_zh")" "$(figures "$OUT_en")" "the dry run's figures and PIDs"
# ... and a refusal's reasons (escalate) and a --pid plan (reclaim_plan, render)
run en reclaim --reload-uvm
run zh zh_reclaim --reload-uvm
assert_eq "$RC_zh" "$RC_en" "--reload-uvm's exit status"
assert_eq "$RC_en" 3 "--reload-uvm refused"
has "$OUT_zh" "✗ PID ${WORKERS[1]}（gv-simcuda）占用着 nvidia-uvm"
has "$OUT_zh" "拒绝：未执行 reload-uvm（原因见上）。"
assert_eq "$(figures "$OUT_zh")" "$(figures "$OUT_en")" "--reload-uvm's figures and PIDs"
run en reclaim --pid "${WORKERS[0]}"
run zh zh_reclaim --pid "${WORKERS[0]}"
assert_eq "$RC_zh" "$RC_en" "--pid's exit status"
has "$OUT_zh" "与它一起维持这块显存的：PID ${WORKERS[1]} 共享它的打开文件描述"
assert_eq "$(figures "$OUT_zh")" "$(figures "$OUT_en")" "--pid's figures and PIDs"
# a usage error: Chinese on stderr, the same status
run en reclaim --grace 5h
run zh zh_reclaim --grace 5h
assert_eq "$RC_zh" "$RC_en" "a usage error's exit status"
assert_eq "$RC_en" 2 "a usage error's exit status"
has "$OUT_zh" "--grace：'5h' 不是不超过 1h 的时长"

note "--json under LANGUAGE=zh_CN is the English document"
run en reclaim --json
run zh zh_reclaim --json
assert_eq "$RC_zh" "$RC_en" "--json's exit status"
jq -e . >/dev/null <<<"$OUT_en" || fail "not JSON: $OUT_en"
[ "$OUT_zh" = "$OUT_en" ] || fail "--json differs under zh_CN: $(diff <(echo "$OUT_en") <(echo "$OUT_zh") | head -20)"
has "$OUT_zh" "\"summary\": \"Dry run: 2 processes would get SIGTERM"

note "--yes in English, then in Chinese on the same ghost made again"
run en reclaim --yes --grace 2s --wait 10s
assert_eq "$RC_en" 0 "--yes in English"
fig_en=$(figures "$OUT_en")
has "$OUT_en" "Memory recovered: 2 processes ended."
ghost
run zh zh_reclaim --yes --grace 2s --wait 10s
assert_eq "$RC_zh" "$RC_en" "--yes's exit status"
for w in "${WORKERS[@]}"; do
        is_dead "$w" || fail "worker $w still alive after the Chinese --yes"
        has "$OUT_zh" "SIGTERM 发往 PID $w（gv-simcuda），经由其 pidfd"
done
has "$OUT_zh" "正在扫描（残留显存要在第一次采样 0.3 秒后由第二次采样确认）"
has "$OUT_zh" "GPU 1  1536 MiB → 0 MiB  释放 1536 MiB"
has "$OUT_zh" "显存已收回：2 个进程已结束。"
hasnt "$OUT_zh" "Memory recovered"
assert_eq "$(used 1)" 0 "GPU 1 free after the Chinese --yes"
assert_eq "$(figures "$OUT_zh")" "$fig_en" "--yes's figures and PIDs (by role)"

echo PASS
