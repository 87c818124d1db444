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

# Run "$@" with a private /dev in a new mount namespace: NVIDIA's real library, run as root,
# creates /dev/nvidiactl when it is missing (observed: char 195:255), and the host's /dev must
# stay as it is. The private /dev has null, zero, full, random, urandom, tty and the fd links.
# Without root the library cannot create nodes, and no namespace is needed (or possible).
in_private_dev() {
        if [ "$(id -u)" != 0 ]; then
                "$@"
                return
        fi
        unshare -m --propagation private bash -c '
set -e
real=$(mktemp -d /tmp/gv-realdev.XXXXXX)
mount --bind /dev "$real"
mount -t tmpfs -o mode=755 gv-dev /dev
for n in null zero full random urandom tty; do touch "/dev/$n"; mount --bind "$real/$n" "/dev/$n"; done
ln -s /proc/self/fd /dev/fd
ln -s /proc/self/fd/0 /dev/stdin
ln -s /proc/self/fd/1 /dev/stdout
ln -s /proc/self/fd/2 /dev/stderr
umount "$real"
rmdir "$real"
"$@"' in_private_dev "$@"
}

# NVIDIA's programs (python3, nvtop, nvidia-smi) are not built with the sanitizers; to load a
# stand-in that is (the ASan build tree), the sanitizer runtime must come first. Sets
# FOREIGN_ENV: the environment assignments to run them with (none in an ordinary build).
# Their own leaks are not ours, and a SIGSEGV must stay a signal (nvml_unload.py).
oracle_foreign_env() {
        local lib=$GV_BUILD/sim/current/libnvidia-ml.so.1 rt
        FOREIGN_ENV=()
        rt=$(ldd "$lib" | awk '/lib(asan|ubsan)\.so/ { printf "%s%s", sep, $3; sep = ":" }')
        [ -n "$rt" ] || return 0
        FOREIGN_ENV=("LD_PRELOAD=$rt" "ASAN_OPTIONS=detect_leaks=0:handle_segv=0:halt_on_error=1")
}
