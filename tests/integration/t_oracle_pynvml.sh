#!/usr/bin/env bash
# NVIDIA's Python binding (nvidia-ml-py 11.525 from Debian, unmodified) on the simulated driver,
# for every library variant: what it reads must equal `ghostvram snapshot --json` and the
# simulator's truth, or fail exactly the way it fails on a real driver of that generation
# (FunctionNotFound without _v3; the 32-byte _v3 records of 535.43-535.86 misread).
# Scenarios: several processes per GPU, a killed owner whose workers keep its memory,
# hidden_owner, uncharged memory, MIG mode, MIG instances (MIG device handles, their memory and
# processes, the instance ids in the GPU's records; NO_PERMISSION without root), gpu_lost,
# gpu_lost_handle.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/oracle_lib.sh"
oracle_fetch
oracle_foreign_env
PY=/usr/bin/python3 # the system python, as Debian's python3-pynvml is used
[ -x "$PY" ] || fail "$PY is missing (Debian package python3)"
ORACLE=$GV_SRC/tests/oracle

# truth.json for the current scenario: the sim's gpus file plus what this test started
# (LISTED_<gpu>: "pid:bytes ..." NVML must list; ALLOC_<gpu>: bytes allocated; LOST_<gpu>;
# MIGN_<gpu>: MIG instances; MIGL_<gpu>: "pid:bytes:gpu-instance ..." of the MIG contexts)
truth() {
        local g line total_mib reserved_mib
        echo '{"gpus": ['
        for g in 0 1; do
                line=$(grep "^gpu=$g " "$SIM/gpus")
                total_mib=$(sed 's/.* total_mib=\([0-9]*\).*/\1/' <<<"$line")
                reserved_mib=$(sed 's/.* reserved_mib=\([0-9]*\).*/\1/' <<<"$line")
                local listed=LISTED_$g alloc=ALLOC_$g lost=LOST_$g lh=LOSTH_$g mig=MIG_$g mign=MIGN_$g migl=MIGL_$g
                [ "$g" = 0 ] || echo ","
                jq -n --argjson i "$g" --arg uuid "$(sed 's/.* uuid=\([^ ]*\).*/\1/' <<<"$line")" \
                        --arg name "$(sed 's/.* name=//' <<<"$line")" \
                        --arg pci "$(sed 's/.* pci=\([^ ]*\).*/\1/' <<<"$line")" \
                        --argjson total $((total_mib * MIB)) --argjson reserved $((reserved_mib * MIB)) \
                        --argjson alloc "${!alloc}" --arg listed "${!listed}" \
                        --argjson lost "${!lost:-false}" --argjson lh "${!lh:-false}" --argjson mig "${!mig:-false}" \
                        --argjson mign "${!mign:-0}" --arg migl "${!migl:-}" \
                        '{index: $i, uuid: $uuid, name: $name, pci: $pci, total: $total, reserved: $reserved,
                          allocated: $alloc, lost: $lost, lost_handle: $lh, mig: $mig, mig_instances: $mign,
                          listed: [$listed | split(" ")[] | select(. != "") | split(":") | map(tonumber)],
                          mig_listed: [$migl | split(" ")[] | select(. != "") | split(":") | map(tonumber)]}'
        done
        echo ']}'
}

# Read with pynvml, ghostvram and gv-simquery, then compare: check VARIANT SCENARIO
check() {
        local d=$GV_TMP/$1.$2
        mkdir -p "$d"
        truth >"$d/truth.json"
        env "${FOREIGN_ENV[@]}" GHOSTVRAM_SIM="$SIM" LD_LIBRARY_PATH="$GV_BUILD/sim/$1" PYTHONPATH="$NV/pynvml" \
                "$PY" "$ORACLE/pynvml_read.py" >"$d/pynvml.json" || fail "$1/$2: pynvml_read.py crashed"
        GHOSTVRAM_SIM=$SIM "$GV_BIN" snapshot --json >"$d/snapshot.json" || true
        jq -e .gpus "$d/snapshot.json" >/dev/null || fail "$1/$2: ghostvram snapshot --json gave no GPUs"
        query >"$d/raw.json" || true
        if ! "$PY" "$ORACLE/pynvml_check.py" "$1" "$d/pynvml.json" "$d/snapshot.json" "$d/truth.json" \
                "$d/raw.json" >"$d/check.out"; then
                cat "$d/check.out"
                fail "$1/$2: pynvml, ghostvram and the simulator disagree (files in $d)"
        fi
        note "$1/$2: $(grep -c '^ok ' "$d/check.out") checks"
}

pynvml_version=$(oracle_version python3-pynvml bookworm)
note "pynvml $pynvml_version"
case $pynvml_version in
11.525.*) ;;
*) fail "the tests' expectations are those of pynvml 11.525 (24-byte _v3 records); got $pynvml_version" ;;
esac

for variant in current 535.54.03 535.98 470.42.01 440.33.01; do
        sim_new --gpus 2
        "$GV_BIN" sim set "$SIM" driver="$variant" >/dev/null
        # GPU 0: job A (owner + 2 workers) and job B; GPU 1: job C and 300 MiB no process is charged for
        sim_run --gpu 0 --mib 1024 --workers 2
        a=$OWNER a_workers=("${WORKERS[@]}")
        sim_run --gpu 0 --mib 256
        b=$OWNER
        sim_run --gpu 1 --mib 512
        c=$OWNER
        "$GV_BIN" sim set "$SIM" uncharged_mib=1:300 >/dev/null
        LISTED_0="$a:$((1024 * MIB)) $b:$((256 * MIB))" ALLOC_0=$((1280 * MIB))
        LISTED_1="$c:$((512 * MIB))" ALLOC_1=$((812 * MIB))
        LOST_0=false LOST_1=false LOSTH_0=false LOSTH_1=false MIG_0=false MIG_1=false MIGN_1=0 MIGL_1=""
        check "$variant" several-procs

        # kill -9 the owner: its workers keep the context; NVML lists the dead PID, not them
        kill_wait "$a"
        for w in "${a_workers[@]}"; do is_dead "$w" && fail "worker $w died with its owner"; done
        check "$variant" killed-owner

        # hidden_owner: the dead owner is not listed, its memory stays used
        "$GV_BIN" sim set "$SIM" hidden_owner=on >/dev/null
        LISTED_0="$b:$((256 * MIB))"
        check "$variant" hidden-owner

        "$GV_BIN" sim set "$SIM" mig=0:on >/dev/null
        MIG_0=true
        check "$variant" mig

        # MIG instances on GPU 1 (its job gone first, as MIG needs an idle GPU): a live job in
        # instance 1, a killed one whose worker keeps its memory in instance 2
        kill -9 -- "-$c" 2>/dev/null || true
        kill_wait "$c"
        "$GV_BIN" sim set "$SIM" mig_instances=1:2 hidden_owner=off >/dev/null
        LISTED_0="$a:$((1024 * MIB)) $b:$((256 * MIB))"
        sim_run --gpu 1 --mib 256 --mig-instance 1
        d=$OWNER
        sim_run --gpu 1 --mib 128 --mig-instance 2 --workers 1
        e=$OWNER
        kill_wait "$e"
        LISTED_1="$d:$((256 * MIB)) $e:$((128 * MIB))" ALLOC_1=$((684 * MIB))
        MIG_1=true MIGN_1=2 MIGL_1="$d:$((256 * MIB)):1 $e:$((128 * MIB)):2"
        check "$variant" mig-instances
        # without root: the GPU's own list is NO_PERMISSION in pynvml too (_v3 only: pynvml
        # looks it up first), its MIG devices still answer
        if [ "$variant" = current ]; then
                chmod 755 "$GV_TMP" "$SIM"
                # the cache, the build and the source trees may lie in root's home: nobody reads copies
                nobody_copy "$NV/pynvml" "$ORACLE/pynvml_read.py"
                out=$(setpriv --reuid=65534 --regid=65534 --clear-groups env "${FOREIGN_ENV[@]}" GHOSTVRAM_SIM="$SIM" \
                        LD_LIBRARY_PATH="$NOBODY_SIMLIB/$variant" PYTHONPATH="$NOBODY_DIR/pynvml" "$PY" "$NOBODY_DIR/pynvml_read.py") ||
                        fail "pynvml_read.py as nobody crashed"
                assert_eq "$(jq -c '.gpus[1].compute' <<<"$out")" '{"error":4,"text":"Insufficient Permissions"}' \
                        "pynvml as nobody: the MIG GPU's own list"
                assert_eq "$(jq -c '[.gpus[1].mig_devices.devices[0:2][].compute.ok | map([.pid, .gpuInstanceId])]' <<<"$out")" \
                        "[[[$d,1]],[[$e,2]]]" "pynvml as nobody: each MIG device's list"
                assert_eq "$(jq -c '.gpus[0].compute.error' <<<"$out")" 4 "pynvml as nobody: GPU 0 (mig=on, no instance) too"
                assert_eq "$(jq -c '.gpus[1].memory_v2.ok.used' <<<"$out")" "$ALLOC_1" "pynvml as nobody: the MIG GPU's memory"
                note "$variant/mig-unprivileged: 4 checks"
        fi

        "$GV_BIN" sim set "$SIM" gpu_lost=1:on >/dev/null
        LOST_1=true
        check "$variant" gpu-lost

        "$GV_BIN" sim set "$SIM" gpu_lost_handle=1:on >/dev/null
        LOSTH_1=true
        check "$variant" gpu-lost-handle
        for p in "$a" "$b" "$c" "$d" "$e"; do kill -9 -- "-$p" 2>/dev/null || true; done
done
echo "PASS"
