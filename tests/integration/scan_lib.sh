# scan_lib.sh: helpers for the scan tests (source it after lib.sh): scan and reclaim's dry
# run as JSON, and readers of their documents.
PFX=(env) # a command prefix: nsenter into a container, setpriv to another user, ...
# scan / reclaim --json (dry run), keeping the exit status in RC / PRC and the document in S / R
scan_rc() { set +e; S=$("${PFX[@]}" GHOSTVRAM_SIM="$SIM" "$GV_BIN" scan --json --confirm 300ms "$@"); RC=$?; set -e; }
plan_rc() { set +e; R=$("${PFX[@]}" GHOSTVRAM_SIM="$SIM" "$GV_BIN" reclaim --json --confirm 300ms "$@"); PRC=$?; set -e; }
verdict() { jq -r ".gpus[] | select(.index == $1) | .verdict" <<<"$S"; }
# listed foreign ghost unattributed, in MiB
ledger() {
        jq -r ".gpus[] | select(.index == $1) | .memory | [.listed_bytes, .foreign_bytes, .ghost_bytes, .unattributed_bytes]
               | map(if . == null then \"null\" else (. / 1048576 | floor | tostring) end) | join(\" \")" <<<"$S"
}
attributed() { jq -r "[.gpus[] | select(.index == $1) | .processes[] | select(.attribution != null) | .pid] | sort | map(tostring) | join(\" \")" <<<"$S"; }
confidence() { jq -r ".gpus[] | select(.index == $1) | .findings[0].confidence" <<<"$S"; }
finding_text() { jq -r ".gpus[] | select(.index == $1) | .findings[0] | [.summary, .next_step] + .evidence | join(\"\\n\")" <<<"$S"; }
next_step() { jq -r ".gpus[] | select(.index == $1) | .findings[0].next_step" <<<"$S"; }
targets() { jq -r '[.plan.targets[].pid] | sort | map(tostring) | join(" ")' <<<"$R"; }
sorted() { printf '%s\n' "$@" | sort -n | tr '\n' ' ' | sed 's/ $//'; }
sums() {
        assert_eq "$(jq -r '[.gpus[] | select(.memory.ghost_bytes != null) | (.memory.used_bytes - .memory.listed_bytes - .memory.foreign_bytes - .memory.ghost_bytes - .memory.unattributed_bytes - .memory.freeing_bytes)] | map(select(. != 0)) | length' <<<"$S")" 0 "ledger sums"
}
# Bundles edited by hand for the static cases, from a bundle of a dead job (both samples):
# bundle_dstate DIR PID: PID in D state, waiting inside the nvidia modules;
# bundle_leak DIR PID...: the PIDs gone, NVML listing nobody, root with full visibility.
bundle_dstate() {
        local dir
        for dir in "$1" "$1/confirm"; do
                sed -i -E "s/^($2 \\([^)]*\\)) S /\\1 D /" "$dir/proc/$2/stat"
                grep -q ") D " "$dir/proc/$2/stat" || fail "could not edit the state in $dir"
                printf 'uvm_va_space_destroy' > "$dir/proc/$2/wchan"
        done
}
bundle_leak() {
        local dir p d=$1
        shift
        for dir in "$d" "$d/confirm"; do
                for p in "$@"; do rm -rf "$dir/proc/$p"; done
                jq '.gpus[].nvml_processes = []' "$dir/nvml.json" > "$dir/n" && mv "$dir/n" "$dir/nvml.json"
                jq '.limits = [] | .euid = 0 | .initial_pidns = true | .procs = {}' "$dir/host.json" > "$dir/h" && mv "$dir/h" "$dir/host.json"
        done
}
INITIAL=yes
[ -z "${GV_IN_PIDNS:-}" ] || INITIAL=no

