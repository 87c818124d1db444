# scan_lib.sh: helpers for the scan tests (source it after lib.sh): scan and reclaim's dry
# run as JSON, and readers of their documents.
PFX=(env) # a command prefix: nsenter into a container, setpriv to another user, ...
# scan / reclaim --json (dry run), keeping the exit status in RC / PRC and the document in S / R.
# Each also checks that a bundle recorded at that moment answers as the live host did
# (replay_agrees_scan, replay_agrees_plan), so that every situation a test builds is checked;
# SCAN_AGREE=no turns that off (a loop of many scans that checks something else).
SCAN_AGREE=${SCAN_AGREE:-yes}
scan_rc() {
        set +e; S=$("${PFX[@]}" GHOSTVRAM_SIM="$SIM" "$GV_BIN" scan --json --confirm 300ms "$@"); RC=$?; set -e
        [ "$SCAN_AGREE" = no ] || replay_agrees_scan "$@"
}
plan_rc() {
        [ "$SCAN_AGREE" = no ] || _gv_record_bundle
        set +e; R=$("${PFX[@]}" GHOSTVRAM_SIM="$SIM" "$GV_BIN" reclaim --json --confirm 300ms "$@"); PRC=$?; set -e
        [ "$SCAN_AGREE" = no ] || replay_agrees_plan "$@"
}

# --- live and replayed answers agree ----------------------------------------------------------
# What the judgement of a scan says, as the live host and a bundle of it must both say: the exit
# status, the limits, and per GPU the memory, verdict, findings (code, confidence, bytes,
# summary, PIDs, evidence, next step) and every process's class and attribution.
scan_digest() {
        jq -S '{exit_status, limits, gpus: [.gpus[] | {index, status, memory, verdict, ghost_confirmed,
                findings: [.findings[] | {code, confidence, bytes, summary, pids, evidence, next_step}],
                processes: [.processes[] | {pid, owner_class, attribution}]}]}'
}
# reclaim's plan: its targets (with their link and reason) and what it leaves alone, and why.
plan_digest() {
        jq -S '{targets: [(.plan.targets // [])[] | {pid, gpu_index, link, to_pid, why, family}] | sort_by(.pid),
                skipped: [(.plan.skipped // [])[] | {pid, gpu_index, rule, reason}] | sort_by(.pid)}'
}
# _gv_record_bundle [SCAN-ARGS...]: a live scan recorded into a fresh bundle, BUNDLE (its
# document in BUNDLE_LIVE, its exit status in BUNDLE_RC). The directory is writable by the
# user PFX runs as.
_gv_record_bundle() {
        BUNDLE=$GV_TMP/bundle.$RANDOM$RANDOM
        mkdir -m 777 "$BUNDLE"
        set +e
        BUNDLE_LIVE=$("${PFX[@]}" GHOSTVRAM_SIM="$SIM" "$GV_BIN" scan --json --confirm 300ms --save-bundle "$BUNDLE" "$@")
        BUNDLE_RC=$?
        set -e
}
# replay_agrees_scan [SCAN-ARGS...]: record a bundle with a live scan, read it back with the same
# options: the two judgements must be the same, and so must the exit statuses.
replay_agrees_scan() {
        _gv_record_bundle "$@"
        local rep rrc
        set +e
        rep=$("${PFX[@]}" "$GV_BIN" scan --json --confirm 300ms --from-bundle "$BUNDLE" "$@")
        rrc=$?
        set -e
        assert_eq "$rrc" "$BUNDLE_RC" "exit status of the scan replayed from its bundle"
        local a b
        a=$(scan_digest <<<"$BUNDLE_LIVE") || fail "the recorded scan's document: $BUNDLE_LIVE"
        b=$(scan_digest <<<"$rep") || fail "the replayed scan's document: $rep"
        [ -n "$a" ] && [ -n "$b" ] || fail "no scan document to compare (live: '$BUNDLE_LIVE', replayed: '$rep')"
        [ "$a" = "$b" ] || fail "the scan replayed from $BUNDLE does not answer as the live one: $(diff <(echo "$a") <(echo "$b"))"
}
# replay_agrees_plan [RECLAIM-ARGS...]: reclaim's plan from the bundle recorded just before the
# live reclaim (plan_rc) must be the live one (acting options dropped: a bundle only plans).
replay_agrees_plan() {
        local args=() skip=0 x rep
        for x in "$@"; do
                if [ "$skip" = 1 ]; then skip=0; continue; fi
                case "$x" in
                --yes | -y | --grace=* | --wait=*) ;;
                --grace | --wait) skip=1 ;;
                *) args+=("$x") ;;
                esac
        done
        local rrc
        set +e
        rep=$("${PFX[@]}" "$GV_BIN" reclaim --json --confirm 300ms --from-bundle "$BUNDLE" "${args[@]}")
        rrc=$?
        set -e
        assert_eq "$rrc" "$PRC" "exit status of reclaim's plan replayed from its bundle"
        local a b
        # an error document has no plan: its digest would be an empty plan's, agreeing with any
        jq -e 'has("plan")' <<<"$R" >/dev/null || fail "the live reclaim's document has no plan: $R"
        jq -e 'has("plan")' <<<"$rep" >/dev/null || fail "the reclaim replayed from $BUNDLE has no plan: $rep"
        a=$(plan_digest <<<"$R") || fail "the live plan's document: $R"
        b=$(plan_digest <<<"$rep") || fail "the replayed plan's document: $rep"
        [ "$a" = "$b" ] || fail "reclaim's plan from $BUNDLE is not the live one: $(diff <(echo "$a") <(echo "$b"))"
}
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

