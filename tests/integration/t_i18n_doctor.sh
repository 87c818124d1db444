#!/usr/bin/env bash
# doctor and xid in Chinese (docs/i18n.md): on a simulated host with findings to act on (a GPU
# without persistence mode, a pending row remapping, an Xid 79 minutes old, a driver library
# that differs from the loaded module, a closed kernel log), `LANGUAGE=zh_CN ghostvram doctor`
# and `doctor --explain` say it in Chinese with the same codes, levels, figures and exit status
# as in English; `xid explain 79` and `xid --kmsg FILE` on a saved kernel log too, the Chinese
# wrapped by columns; every --json is byte for byte the English one.
. "$(dirname "$0")/lib.sh"
need_tool jq jq

# zh CMD...: CMD in simplified Chinese (the C locale lib.sh sets would outrank LANGUAGE)
zh() { env -u LC_ALL -u LC_MESSAGES -u LANG LANGUAGE=zh_CN "$@"; }
# numbers TEXT: every figure of TEXT (the digits' runs), sorted: a translation moves a figure
# within its sentence (%2$s), never drops, adds or changes one
numbers() { grep -oE '[0-9]+' <<<"$1" | sort | tr '\n' ' '; }
# has TEXT WORD WHAT: TEXT holds WORD
has() { grep -F -- "$2" >/dev/null <<<"$1" || fail "$3: no '$2' in: $1"; }
# hasnt TEXT WORD WHAT
hasnt() { if grep -F -- "$2" >/dev/null <<<"$1"; then fail "$3: '$2' left in: $1"; fi; }
# same_figures EN ZH WHAT
same_figures() { assert_eq "$(numbers "$2")" "$(numbers "$1")" "$3: the figures of the Chinese text"; }

sim_new --gpus 2 --memory 16384 --reserved 512
ver=$(GHOSTVRAM_SIM="$SIM" "$GV_QUERY" | jq -r .driver)
[ -n "$ver" ] && [ "$ver" != null ] && [ "$ver" != 535.161.07 ] || fail "the simulated driver's version: '$ver'"
R="$GV_TMP/root"
mkdir -p "$R/proc/driver/nvidia" "$R/proc/sys/kernel" "$R/etc"
printf 'NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.161.07  Thu Aug 22 00:00:00 UTC 2024\n' \
        >"$R/proc/driver/nvidia/version"
printf 'PreserveVideoMemoryAllocations: 1\nTemporaryFilePath: "/var/tmp"\n' >"$R/proc/driver/nvidia/params"
printf 'nvidia_uvm 1437696 0 - Live 0x0000000000000000 (PO)\n' >"$R/proc/modules"
echo 1 >"$R/proc/sys/kernel/dmesg_restrict"
"$GV_BIN" sim set "$SIM" persistence=1:off remap_pending=0:on >/dev/null
# an Xid 79 on GPU 1 (0000:43:00) 320 s old, the driver loaded an hour before: "5 min ago" in
# both runs. The lines carry the journal's wall-clock time (`journalctl -k -o short-iso`), not
# /dev/kmsg's boot clock: a record 320 s old by the boot clock cannot be written on a host up for
# less than that (a fresh CI machine).
iso() { date -u -d "@$1" +%Y-%m-%dT%H:%M:%S+0000; }
now=$(date +%s)
printf '%s gpu-node kernel: %s\n%s gpu-node kernel: %s\n' \
        "$(iso $((now - 3600)))" 'NVRM: loading NVIDIA UNIX x86_64 Kernel Module  560.35.03  Release Build  (dvs-builder@U16)  Thu Aug 22 00:00:00 UTC 2024' \
        "$(iso $((now - 320)))" 'NVRM: Xid (PCI:0000:43:00): 79, pid=0, name=, GPU has fallen off the bus.' \
        >"$SIM/kmsg"

# doctor ARGS...: EN and ZH get the English and the Chinese output, ERC and ZRC their status
doctor() {
        ERC=0 ZRC=0
        EN=$(GHOSTVRAM_SIM="$SIM" "$GV_BIN" doctor --root "$R" "$@" 2>&1) || ERC=$?
        ZH=$(GHOSTVRAM_SIM="$SIM" zh "$GV_BIN" doctor --root "$R" "$@" 2>&1) || ZRC=$?
}

note "doctor: Chinese findings, the same codes, levels, figures and exit status"
doctor -v
assert_eq "$ERC" 1 "English doctor's exit status (warnings)"
assert_eq "$ZRC" "$ERC" "Chinese doctor's exit status"
# the level, place and code columns do not change
cols() { grep -E '^(ok|info|warn|unknown) ' <<<"$1" | cut -c1-37; } # "%-7s %-6s %-22s "
[ "$(cols "$EN" | wc -l)" -ge 20 ] || fail "too few findings: $EN"
assert_eq "$(cols "$ZH")" "$(cols "$EN")" "level, GPU and code of each finding"
same_figures "$EN" "$ZH" "doctor -v"
has "$EN" "GPU 1: persistence mode is off" "English doctor"
has "$ZH" "GPU 1：持久模式已关闭" "persistence-off"
has "$ZH" "GPU 0：有待生效的行重映射" "row-remap-pending"
has "$ZH" "下一步：排空 GPU 0，然后重置它（sudo nvidia-smi -r -i 0）或重启" "row-remap-pending's next step, its command kept"
has "$ZH" "GPU 1：Xid 79（GPU 已从总线上掉线），5 min 前（critical）：会触发告警" "recent-xid: the Xid's name from the catalogue"
has "$ZH" "排空该节点并重启；GPU 重置无法让 GPU 1 恢复（\`ghostvram xid explain 79\`）" "recent-xid's next step"
has "$ZH" "NVML 库（$ver）与已加载的内核模块（535.161.07）版本不一致" "version-mismatch"
has "$ZH" "证据：  NVML 持久模式：已禁用；nvidia-persistenced 未运行" "an evidence line"
has "$ZH" "解释了 2 个 nvidia 模块参数" "module-params (a plural)"
has "$ZH" "nvidia_uvm 未被使用：可以重新加载" "uvm-in-use"
hasnt "$ZH" "persistence mode" "Chinese doctor"
hasnt "$ZH" "evidence:" "Chinese doctor's labels"

note "doctor --explain: how to prevent ghosts and the table of driver releases, in Chinese"
doctor --explain
assert_eq "$ZRC" "$ERC" "doctor --explain's exit status"
same_figures "$EN" "$ZH" "doctor --explain"
has "$ZH" "预防残留显存" "--explain's heading"
has "$ZH" "结束整个作业，而不只是它的主进程。" "the first way to prevent a ghost"
has "$ZH" "有已记录显存问题的驱动版本（driver-known-issue）" "the table's heading, its code kept"
has "$ZH" "535.161.07 起至 535.161.08 之前（开源内核模块）：535.161.07 开源内核模块：" "a row of the table"
has "$ZH" "    来源：https://github.com/NVIDIA/open-gpu-kernel-modules/issues/613 (open)" "a row's source, as written"
hasnt "$ZH" "Preventing ghost memory" "--explain in Chinese"

note "doctor --json: English whatever the language"
E=$(GHOSTVRAM_SIM="$SIM" "$GV_BIN" doctor --root "$R" --json --explain) || true
Z=$(GHOSTVRAM_SIM="$SIM" zh "$GV_BIN" doctor --root "$R" --json --explain) || true
jq -e '.findings | length > 20' <<<"$E" >/dev/null || fail "doctor --json: $E"
assert_eq "$Z" "$E" "doctor --json --explain under LANGUAGE=zh_CN"

note "xid explain 79: what it means, its cause, what to do, in Chinese"
EN=$("$GV_BIN" xid explain 79)
ZH=$(zh "$GV_BIN" xid explain 79)
same_figures "$EN" "$ZH" "xid explain 79"
assert_eq "$(head -n 1 <<<"$ZH")" "Xid 79：GPU 已从总线上掉线" "the first line"
assert_eq "$(sed -n 2p <<<"$ZH")" "$(sed -n 2p <<<"$EN")" "the mnemonic (a code)"
has "$ZH" "含义            驱动无法再通过 PCI Express 访问这块 GPU：GPU 已丢失。" "what it means"
has "$ZH" "重置/重启       是：重启机器；仅重置 GPU 不够。" "reset or reboot"
has "$ZH" "严重程度        critical（处理动作：reboot）" "the severity and action, their names kept"
has "$ZH" "RESTART_BM（重启物理机）" "the catalogue's bucket in words"
hasnt "$ZH" "What to do" "xid explain's labels"
# wrapped by columns (a Chinese character is two) at 96, a closing mark never starting a line
width=$(LC_ALL=C.UTF-8 wc -L <<<"$ZH")
[ "$width" -le 98 ] && [ "$width" -ge 80 ] || fail "xid explain 79 is $width columns wide: $ZH"
if grep -E '^ *[，。；：、）]' <<<"$ZH" >/dev/null; then fail "a line starts with a closing mark: $ZH"; fi
assert_eq "$(zh "$GV_BIN" xid explain 79 45 --json)" "$("$GV_BIN" xid explain 79 45 --json)" "xid explain --json under LANGUAGE=zh_CN"
# every code of the catalogue explains in Chinese: a name and the four answers each
ZH=$(zh "$GV_BIN" xid explain $(seq 1 60))
assert_eq "$(grep -cE '^Xid [0-9]+：' <<<"$ZH")" 60 "Chinese explanations of Xid 1-60"
assert_eq "$(grep -c '^处理办法 ' <<<"$ZH")" 60 "what to do for Xid 1-60"

note "xid --kmsg FILE: the events of a saved kernel log, in Chinese"
K="$GV_SRC/tests/fixtures/kmsg/dmesg.txt"
ERC=0 ZRC=0
EN=$("$GV_BIN" xid --kmsg "$K") || ERC=$?
ZH=$(zh "$GV_BIN" xid --kmsg "$K") || ZRC=$?
assert_eq "$ZRC" "$ERC" "xid --kmsg's exit status"
same_figures "$EN" "$ZH" "xid --kmsg"
has "$EN" "Xid 79  GPU has fallen off the bus  critical" "English xid"
has "$ZH" "Xid 79  GPU 已从总线上掉线  critical" "Xid 79's name"
has "$ZH" "Xid 13  图形引擎异常  warning" "Xid 13's name"
has "$ZH" "    进程： pid 4242 (python3)" "the process line"
has "$ZH" "    -> 重启机器；GPU 重置无法从中恢复。" "Xid 79's advice"
has "$ZH" "NVSwitch 错误（SXid，不是 GPU Xid）" "an SXid"
n=$(grep -oE '^[0-9]+ events:' <<<"$EN" | cut -d' ' -f1)
[ -n "$n" ] || fail "no count of events: $EN"
has "$ZH" "共 $n 个事件：" "the count of events"
# the kernel's own lines are quoted as they are
assert_eq "$(grep -c 'Graphics SM Warp Exception' <<<"$ZH")" 1 "the kernel's message, quoted"
hasnt "$ZH" "Explain a code" "xid's last line"
assert_eq "$(zh "$GV_BIN" xid --kmsg "$K" --json)" "$("$GV_BIN" xid --kmsg "$K" --json)" "xid --kmsg --json under LANGUAGE=zh_CN"

note "an error in Chinese, the same exit status"
ERC=0 ZRC=0
EN=$("$GV_BIN" xid explain foo 2>&1) || ERC=$?
ZH=$(zh "$GV_BIN" xid explain foo 2>&1) || ZRC=$?
assert_eq "$ERC" 2 "xid explain foo"
assert_eq "$ZRC" 2 "xid explain foo in Chinese"
has "$ZH" "explain：“foo”不是 Xid 编号（例如 79）" "the error"

echo PASS
