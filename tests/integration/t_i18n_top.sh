#!/usr/bin/env bash
# top and serve's page in Chinese (docs/i18n.md) on the classic ghost (a killed job's two
# workers hold 2048 MiB of GPU 1): top --batch and top under tmux at 80 columns show Chinese
# labels with the same figures and PIDs as in English, no line wider than the terminal (a
# Chinese character takes two columns), valid UTF-8; a locale with a decimal comma changes no
# figure; the page is Chinese with lang="zh-CN", while /api/v1/scan and /metrics read the same
# as in English.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/serve_lib.sh"

need_tool tmux tmux
need_tool curl curl
need_tool localedef libc-bin

sim_new --gpus 2 --memory 16384 --reserved 512
sim_run --gpu 1 --mib 2048 --workers 2 --busy
kill_wait "$OWNER"
# reaped too: a zombie's row reads otherwise, and both languages must see the same host
wait_until 10 test ! -e "/proc/$OWNER" || fail "owner $OWNER was never reaped"
W1=${WORKERS[0]} W2=${WORKERS[1]}

# zh ENV...: the environment of a Chinese run (lib.sh's LC_MESSAGES=C would mean English)
ZH=(env -u LC_ALL -u LC_MESSAGES LANGUAGE=zh_CN LANG=C.UTF-8)
# the last frame of `top --batch` at 80 columns (each starts with its title line)
last_frame() {
        "$@" env GHOSTVRAM_SIM="$SIM" COLUMNS="${COLS:-80}" "$GV_BIN" top --batch --interval 1s --iterations 2 --gpu 1 \
                >"$GV_TMP/frames" || fail "top --batch exited $?"
        awk '/^ghostvram top/ { f = "" } { f = f $0 "\n" } END { printf "%s", f }' "$GV_TMP/frames"
}
# the figures of a frame or page: every number, sorted, without what changes between two runs
# (times, the sample's age, the walk's duration, the sparkline's span)
figures_of() {
        # what moves between two frames: times, a process's running time (M:SS) and %CPU (N.N)
        sed -E 's/[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z//g; s/[0-9]{2}:[0-9]{2}:[0-9]{2}//g' |
                sed -E 's/ [0-9]+(-[0-9]+)?:[0-9]{2}(:[0-9]{2})? / /g; s/ [0-9]+\.[0-9] / /g' |
                grep -vE '^(sample|STALE|采样于|过时)' | grep -vE '^  (ghost|残留) ' |
                grep -oE '[0-9]+(\.[0-9]+)?' | sort
}
# widest LINES: the most columns a line of stdin takes (a Chinese character: two)
widest() { LC_ALL=C.UTF-8 wc -L; }

note "top --batch in Chinese: the labels, the same figures and PIDs, 80 columns"
en=$(last_frame)
zh=$(last_frame "${ZH[@]}")
for want in "已用 2048/16384 MiB  残留 2048 MiB（已确认）" "已死 PID $OWNER 的工作进程" \
        "    PID 用户       S GPU   NVML MiB  %SM  角色" "内核 " "1 个事件：x" "条形图：R 保留  L 已列出" \
        "q 退出  g GPU  s 排序" "采样于 " "下一步："; do
        grep -F -- "$want" >/dev/null <<<"$zh" || { echo "$zh" >&2; fail "no '$want' in the Chinese frame"; }
done
grep -E "^ +$W1 root +S 1 +- .* 已死 PID $OWNER 的工作进程 +gv-simcuda" >/dev/null <<<"$zh" ||
        { echo "$zh" >&2; fail "worker $W1's row is not laid out in its columns"; }
grep -E "^ +$W2 root +S 1 +- .* worker of dead PID $OWNER +gv-simcuda" >/dev/null <<<"$en" ||
        { echo "$en" >&2; fail "English: no row of worker $W2"; }
# the figures of frames wide enough that no line is cut (a translation orders its words
# otherwise: at 80 columns another part of a long line is cut)
en_w=$(COLS=400 last_frame)
zh_w=$(COLS=400 last_frame "${ZH[@]}")
[ "$(figures_of <<<"$zh_w" | tr '\n' ' ')" = "$(figures_of <<<"$en_w" | tr '\n' ' ')" ] ||
        { printf '%s\n' "$en_w" "$zh_w" >&2; fail "the frame's figures differ in Chinese"; }
[ "$(figures_of <<<"$zh_w" | grep -c .)" -ge 20 ] || fail "too few figures compared: $(figures_of <<<"$zh_w" | tr '\n' ' ')"
iconv -f UTF-8 -t UTF-8 <<<"$zh" >/dev/null || fail "the Chinese frame is not valid UTF-8"
w=$(widest <<<"$zh")
[ "$w" -le 80 ] && [ "$w" -ge 70 ] || { echo "$zh" >&2; fail "the Chinese frame is $w columns wide at 80"; }
# (a '?' stays where the text has one: the dead owner's user and state, the help key, a gap in
# the sparkline)
! grep -F '?' <<<"$(grep -vE '^ +[0-9]+ \? |^  残留 |\? 帮助' <<<"$zh")" >/dev/null ||
        { echo "$zh" >&2; fail "a character became '?' in the Chinese frame"; }

note "no UTF-8 locale asked for (LANG unset): still Chinese, in UTF-8"
zh_c=$(last_frame env -u LC_ALL -u LC_MESSAGES -u LANG LANGUAGE=zh_CN)
grep -F "已死 PID $OWNER 的工作进程" >/dev/null <<<"$zh_c" || { echo "$zh_c" >&2; fail "not Chinese without LANG"; }
iconv -f UTF-8 -t UTF-8 <<<"$zh_c" >/dev/null || fail "not UTF-8 without LANG"

note "a locale with a decimal comma: top's figures keep their point (only messages follow the locale)"
[ -d /usr/share/i18n/locales ] || fail "no locale sources (Debian package locales): run scripts/install-deps --test"
mkdir -p "$GV_TMP/loc"
localedef -i de_DE -f UTF-8 "$GV_TMP/loc/de_DE.UTF-8" >/dev/null 2>&1 || [ -e "$GV_TMP/loc/de_DE.UTF-8/LC_NUMERIC" ] ||
        fail "localedef could not build de_DE.UTF-8"
# (under ASan: glibc keeps the list it makes of LOCPATH, tests/lsan-locpath.supp)
de=$(last_frame env -u LC_ALL -u LC_MESSAGES LOCPATH="$GV_TMP/loc" LANG=de_DE.UTF-8 \
        LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$GV_SRC/tests/lsan-locpath.supp")
grep -E '^sample [0-9:]{8} UTC, [0-9]+\.[0-9] s old  every 1 s' >/dev/null <<<"$de" ||
        { echo "$de" >&2; fail "the sample line under de_DE.UTF-8 lost its decimal point"; }

note "top under tmux at 80x30 in Chinese: labels, widths, the help dialog"
TM=(tmux -u -S "$GV_TMP/tmux.sock" -f /dev/null)
gv_on_exit '"${TM[@]}" kill-server 2>/dev/null'
"${TM[@]}" new-session -d -s zh -x 80 -y 30 \
        "env -u LC_ALL -u LC_MESSAGES GHOSTVRAM_SIM=$SIM NO_COLOR=1 LANGUAGE=zh_CN LANG=C.UTF-8 $GV_BIN top --interval 1s; echo EXITED >$GV_TMP/zh.rc; sleep 600"
screen_of() { "${TM[@]}" capture-pane -p -t zh; }
wait_screen() { # SECONDS FIXED-STRING
        local end=$((SECONDS + $1))
        until grep -F -- "$2" >/dev/null <<<"$(screen_of)"; do
                [ "$SECONDS" -lt "$end" ] || { screen_of >&2; fail "tmux screen: no '$2'"; }
                sleep 0.2
        done
}
wait_screen 15 "已死 PID $OWNER 的工作进程"
wait_screen 15 "残留 2048 MiB（已确认）"
wait_screen 15 "条形图：R 保留"
scr=$(screen_of)
iconv -f UTF-8 -t UTF-8 <<<"$scr" >/dev/null || fail "the tmux screen is not valid UTF-8"
w=$(widest <<<"$scr")
[ "$w" -le 80 ] || { echo "$scr" >&2; fail "a line of the tmux screen is $w columns wide"; }
# the header's labels start where their columns do, as the rows' fields
grep -E "^    PID 用户       S GPU   NVML MiB  %SM  角色                       关联 / 命令" >/dev/null <<<"$scr" ||
        { echo "$scr" >&2; fail "the table header is not in its columns"; }
"${TM[@]}" send-keys -t zh '?'
wait_screen 10 "按键："
wait_screen 10 "q F10      退出"
scr=$(screen_of)
w=$(widest <<<"$scr")
[ "$w" -le 80 ] || { echo "$scr" >&2; fail "with the help dialog a line is $w columns wide"; }
"${TM[@]}" send-keys -t zh Escape
"${TM[@]}" send-keys -t zh q
wait_until 10 test -s "$GV_TMP/zh.rc" || fail "top did not quit on q"

note "the page in Chinese, the API and the metrics as in English"
serve_start --interval 1s
EN_URL=$URL EN_PID=$SERVE_PID
SERVE_OUT="$GV_TMP/serve-zh.out"
"${ZH[@]}" GHOSTVRAM_SIM="$SIM" "$GV_BIN" serve --listen 127.0.0.1:0 --interval 1s >"$SERVE_OUT" 2>&1 &
ZH_PID=$!
track "$ZH_PID"
wait_for_line "$SERVE_OUT" "listening on"
ZH_URL=$(sed -n 's|.*listening on \(http://.*\):\([0-9]*\)/metrics.*|\1:\2|p' "$SERVE_OUT")
[ -n "$ZH_URL" ] || fail "the Chinese serve printed no address: $(cat "$SERVE_OUT")"
# both past their confirming sample
confirmed() { curl -fsS --max-time 5 "$1/metrics" | grep -E '^ghostvram_gpu_ghost_confirmed\{gpu="1".*\} 1$' >/dev/null; }
wait_until 20 confirmed "$EN_URL" || fail "English serve: no confirmed ghost"
wait_until 20 confirmed "$ZH_URL" || fail "Chinese serve: no confirmed ghost"
get() { curl -fsS --max-time 10 "$1" || fail "GET $1 failed (curl $?)"; }
page_zh=$(get "$ZH_URL/")
page_en=$(get "$EN_URL/")
grep -F '<html lang="zh-CN">' >/dev/null <<<"$page_zh" || fail "the Chinese page does not say lang=\"zh-CN\""
grep -F '<html lang="en">' >/dev/null <<<"$page_en" || fail "the English page does not say lang=\"en\""
for want in "<title>ghostvram：GPU 显存</title>" "<h2 id=\"holders\">进程（3）</h2>" "<th>用户</th><th>状态</th>" \
        "<p class=\"split\">已用 2048 MiB = 已列出 0 MiB + 外部 0 MiB + 残留 2048 MiB + 未归属 0 MiB；另有驱动保留 512 MiB；总计 16384 MiB</p>" \
        "已死 PID $OWNER 的工作进程" "最近的 NVIDIA 内核事件" "本页每 1 秒刷新一次。" "<span class=\"sw ghost\"></span>残留 2048 MiB"; do
        grep -F -- "$want" >/dev/null <<<"$page_zh" || fail "no '$want' on the Chinese page"
done
grep -F "<p class=\"split\">used 2048 MiB = listed 0 MiB + foreign 0 MiB + ghost 2048 MiB + unattributed 0 MiB; driver reservation 512 MiB apart; total 16384 MiB</p>" \
        >/dev/null <<<"$page_en" || fail "the English page's split changed"
# the page's figures: the timelines' paths and times apart, the same numbers
page_figures() { sed -E 's/ d="[^"]*"//g; s/<style>.*<\/style>//; s/[0-9.]+ s\b//g; s/[0-9.]+ 秒//g; s/\(([0-9]+) samples\)|（([0-9]+) 次采样）//g; s/<text class="lbl"[^<]*<\/text>//g; s/y[12]?="[0-9.]+"//g; s/KiB now\)|KiB）//g' | figures_of; }
# (each server samples on its own clock, and each may catch the other in a driver call, holding
# the nodes, as one more process: pages that differ are read again, at most 5 times a second apart)
for try in 1 2 3 4 5; do
        [ "$(page_figures <<<"$page_zh")" != "$(page_figures <<<"$page_en")" ] || break
        sleep 1
        page_zh=$(get "$ZH_URL/")
        page_en=$(get "$EN_URL/")
done
assert_eq "$(page_figures <<<"$page_zh" | tr '\n' ' ')" "$(page_figures <<<"$page_en" | tr '\n' ' ')" "the page's figures in Chinese"
# what programs read: the same document in both languages (times, durations and the count of
# the host's processes apart; and a time inside a sentence: each process dates a kernel record
# from its own reading of the boot time, a microsecond apart)
norm_json() { jq -S 'walk(if type == "object" then with_entries(select(.key | test("time|duration|age|epoch|started|processes_scanned") | not)) elif type == "string" then gsub("[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z"; "TIME") else . end)'; }
# (two servers sample on their own clocks: a document one has and the other not yet is read
# again, at most 5 times a second apart)
for try in 1 2 3 4 5; do
        scan_zh=$(get "$ZH_URL/api/v1/scan" | norm_json)
        scan_en=$(get "$EN_URL/api/v1/scan" | norm_json)
        [ "$scan_zh" != "$scan_en" ] || break
        sleep 1
done
grep -F '"orphaned-holders"' >/dev/null <<<"$scan_en" || fail "the scan JSON has no orphaned-holders verdict"
assert_eq "$scan_zh" "$scan_en" "/api/v1/scan in Chinese"
grep -F "$W1" >/dev/null <<<"$scan_zh" || fail "the scan JSON does not name worker $W1"
norm_metrics() { grep -vE '_(seconds|timestamp)|scans_total|build_info|_bytes_total' | sed -E 's/ [0-9.e+-]+$/ N/'; }
met_zh=$(get "$ZH_URL/metrics")
met_en=$(get "$EN_URL/metrics")
assert_eq "$(norm_metrics <<<"$met_zh")" "$(norm_metrics <<<"$met_en")" "/metrics in Chinese (series and HELP)"
assert_eq "$(grep -E '^ghostvram_gpu_memory_used_bytes' <<<"$met_zh")" "$(grep -E '^ghostvram_gpu_memory_used_bytes' <<<"$met_en")" \
        "the memory series' values in Chinese"
grep -E '^ghostvram_gpu_memory_used_bytes\{gpu="1".*kind="ghost"\} 2147483648$' >/dev/null <<<"$met_zh" ||
        fail "no 2048 MiB ghost in the Chinese metrics"
health=$(get "$ZH_URL/healthz")
grep -E '^ok: data is [0-9.]+ s old$' >/dev/null <<<"$health" || fail "/healthz in Chinese: '$health'"
stop_within 15 "$ZH_PID" TERM
grep -F "ghostvram serve: 正在停止" >/dev/null "$SERVE_OUT" || fail "serve's stop message is not Chinese: $(cat "$SERVE_OUT")"
stop_within 15 "$EN_PID" TERM

echo PASS
