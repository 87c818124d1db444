#!/usr/bin/env bash
# The project's NVML declarations (src/collect/nvml_abi.h) against NVIDIA's nvml.h of CUDA 11.8
# (bookworm) and 12.4 (trixie): tests/oracle/nvml_header_abi.c compares every size, field
# offset, constant and prototype. This script first makes sure that program checks every name
# nvml_abi.h declares and every NVML symbol ghostvram dlsym()s, then shows it can fail.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/oracle_lib.sh"
oracle_fetch
abi=$GV_SRC/src/collect/nvml_abi.h
test_c=$GV_SRC/tests/oracle/nvml_header_abi.c
CC=${CC:-cc}

note "every name nvml_abi.h declares is checked"
names() { # what nvml_abi.h declares, one "KIND NAME" a line
        sed -n 's/^} *\([A-Za-z_0-9][A-Za-z_0-9]*\);.*/type \1/p; s/^typedef [^(]*[ *]\([A-Za-z_0-9]*_t\);.*/type \1/p' "$abi"
        sed -n 's/^ *\(NVML_[A-Z_0-9]*\) = .*/const \1/p; s/^#define \([A-Za-z_0-9]*\) .*/const \1/p' "$abi"
        sed -n 's/^typedef .*(\*\([A-Za-z_0-9]*_fn\))(.*/proto \1/p' "$abi"
        # struct fields: "field STRUCT.NAME"
        awk '/^typedef struct *\{/ { n = 0; inside = 1; next }
             inside && /^\}/ { name = $2; sub(/;.*/, "", name); for (i = 0; i < n; i++) print "field " name "." f[i]; inside = 0; next }
             inside { line = $0; sub(/\/\*.*/, "", line); if (line ~ /;/) { sub(/[[;].*/, "", line); k = split(line, w, /[ *]+/); f[n++] = w[k] } }' "$abi"
}
count=0
while read -r kind name; do
        count=$((count + 1))
        case $kind in
        type) grep -qE "SIZE\($name\)|typedef $name nv_" "$test_c" || fail "nvml_abi.h declares type $name: tests/oracle/nvml_header_abi.c does not check it" ;;
        const) grep -qE "X\($name[,(]|check\(\"$name\"" "$test_c" || fail "nvml_abi.h defines $name: tests/oracle/nvml_header_abi.c does not check it" ;;
        proto) grep -qE "PROTO\($name," "$test_c" || fail "nvml_abi.h declares $name: no PROTO($name, ...) in tests/oracle/nvml_header_abi.c" ;;
        field) grep -qF "FIELD(${name%%.*}, ${name#*.})" "$test_c" || fail "field $name of nvml_abi.h is not checked" ;;
        esac
done < <(names)
[ "$count" -ge 60 ] || fail "only $count names found in nvml_abi.h: the extraction above is broken"
note "$count names of nvml_abi.h are checked"

note "every NVML symbol ghostvram resolves is checked with the type it is called through"
syms=$(grep -ohE '"nvml[A-Z][A-Za-z_0-9]+"' "$GV_SRC"/src/collect/*.c | tr -d '"' | sort -u)
[ -n "$syms" ] || fail "no dlsym'd NVML names found in src/collect"
for s in $syms; do
        case $s in
        # only probed for presence (the 535.43-535.86 stride rule), never called
        nvmlDeviceGetConfComputeMemSizeInfo) grep -q "&$s" "$test_c" || fail "$s is not checked" ;;
        *) grep -qE "PROTO\([A-Za-z_0-9]+, $s, " "$test_c" || fail "ghostvram resolves $s: no PROTO(..., $s, ...) in tests/oracle/nvml_header_abi.c" ;;
        esac
done

compile() { # HEADER_DIR SRC_INCLUDE_DIR OUT
        "$CC" -std=gnu11 -Wall -Wextra -Werror -I"$1" -I"$2" "$test_c" -o "$3"
}
for suite in bookworm trixie; do
        hdir=$(dirname "$(readlink -f "$NV/nvml.h-$suite")")
        note "nvml.h of libnvidia-ml-dev $(oracle_version libnvidia-ml-dev $suite) ($suite)"
        compile "$hdir" "$GV_SRC/src" "$GV_TMP/abi-$suite" || fail "nvml_header_abi.c does not compile against the $suite nvml.h"
        rc=0
        "$GV_TMP/abi-$suite" >"$GV_TMP/abi-$suite.out" || rc=$?
        grep -v '^ok ' "$GV_TMP/abi-$suite.out" || true
        case "$suite:$rc" in
        trixie:0) ;;                          # every check present and equal
        bookworm:2) # 11.8 predates the detail list: exactly those are absent, all else equal
                assert_eq "$(grep -c '^ABSENT' "$GV_TMP/abi-$suite.out")" 2 "names absent from the 11.8 header"
                grep -q '^ABSENT nvmlProcessDetail_v1_t' "$GV_TMP/abi-$suite.out" || fail "11.8: wrong names absent" ;;
        *) fail "the project's NVML declarations differ from the $suite nvml.h (exit $rc)" ;;
        esac
        n=$(grep -c '^ok ' "$GV_TMP/abi-$suite.out")
        [ "$n" -ge 150 ] || fail "$suite: only $n checks passed"
done

note "the check can fail: a copy of nvml_abi.h with one field, one constant and one prototype wrong"
mkdir -p "$GV_TMP/mutant/collect"
sed -e 's/NVML_ERROR_NO_DATA = 21/NVML_ERROR_NO_DATA = 22/' \
    -e 's/^        unsigned long long reserved; /        unsigned int reserved; /' \
    -e 's/typedef nvmlReturn_t (\*nvmlDeviceGetMigMode_fn)(nvmlDevice_t, unsigned int \*, unsigned int \*);/typedef nvmlReturn_t (*nvmlDeviceGetMigMode_fn)(nvmlDevice_t, unsigned int *);/' \
    "$abi" >"$GV_TMP/mutant/collect/nvml_abi.h"
# the static assertions of nvml_abi.h would stop the compile first: drop them in the copy
sed -i '/^static_assert/d' "$GV_TMP/mutant/collect/nvml_abi.h"
cmp -s "$abi" "$GV_TMP/mutant/collect/nvml_abi.h" && fail "the mutation did not apply"
compile "$(dirname "$(readlink -f "$NV/nvml.h-trixie")")" "$GV_TMP/mutant" "$GV_TMP/abi-mutant" || fail "the mutant does not compile"
rc=0
"$GV_TMP/abi-mutant" >"$GV_TMP/mutant.out" || rc=$?
assert_eq "$rc" 1 "exit status of the check on a wrong nvml_abi.h"
grep -q '^FAIL NVML_ERROR_NO_DATA: nvml_abi.h says 22' "$GV_TMP/mutant.out" || fail "a wrong constant was not caught"
grep -qF 'FAIL sizeof(nvmlMemory_v2_t.reserved)' "$GV_TMP/mutant.out" || fail "a wrong field was not caught"
grep -q '^FAIL prototype nvmlDeviceGetMigMode_fn' "$GV_TMP/mutant.out" || fail "a wrong prototype was not caught"
echo "PASS"
