# oracle_lib.sh: NVIDIA's real userspace for the oracle tests (t_oracle_*.sh); source it after
# lib.sh. The packages come from scripts/fetch-nvidia-userspace (cached; ctest's
# oracle/fetch fixture fetches them first). A test that cannot get them fails: it never skips.

# Sets NV (the cache directory: nvml.h-*, libnvidia-ml.so.1, pynvml/, nvtop, nvidia-smi).
oracle_fetch() {
        : "${GV_SRC:?GV_SRC must name the source tree}"
        NV=$("$GV_SRC/scripts/fetch-nvidia-userspace") ||
                fail "NVIDIA's userspace could not be fetched (scripts/fetch-nvidia-userspace, message above): the oracle tests need it"
        [ -d "$NV" ] || fail "fetch-nvidia-userspace printed '$NV', not a directory"
}

# The version of a fetched package: oracle_version PACKAGE SUITE
oracle_version() {
        awk -v p="$1" -v s="$2" '$1 == p && $2 == s { print $3 }' "$NV/manifest"
}
