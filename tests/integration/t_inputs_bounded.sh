#!/usr/bin/env bash
# Every file input is bounded: regular files only (or a clear error naming the path), a size cap,
# the deadline honoured. /dev/zero, /dev/urandom, FIFOs and huge files as kernel logs, bundle
# files and a simulated host's kmsg end at once with a message; a bundle's symlinked process is
# said, not silently dropped; --save-bundle refuses a file or a non-empty directory.
. "$(dirname "$0")/lib.sh"

# run CMD... with a 20 s guard; sets RC, OUT (stdout), ERR (stderr), SECS (wall time)
timed() {
        local t0 t1
        t0=$(date +%s%N)
        set +e
        timeout 20 "$@" >"$GV_TMP/out" 2>"$GV_TMP/err"
        RC=$?
        set -e
        t1=$(date +%s%N)
        SECS=$(((t1 - t0) / 1000000))
        OUT=$(cat "$GV_TMP/out")
        ERR=$(cat "$GV_TMP/err")
        [ "$RC" != 124 ] || fail "$* hung (killed after 20 s)"
}
# quick: it ended well before the 20 s guard (10 s: a loaded machine, ASan's start and exit);
# that it refused without reading is what its message says
quick() { [ "$SECS" -lt 10000 ] || fail "took $SECS ms (more than 10000 ms)"; }

note "xid --kmsg /dev/zero, /dev/urandom, a FIFO: refused at once, in words"
mkfifo "$GV_TMP/fifo"
for f in /dev/zero /dev/urandom "$GV_TMP/fifo"; do
        timed "$GV_BIN" xid --kmsg "$f"
        assert_eq "$RC" 2 "xid --kmsg $f"
        quick
        grep -q "$f: not a regular file" <<<"$ERR" || fail "xid --kmsg $f says: $ERR"
done

note "scan --kmsg /dev/zero is refused at once (exit 2, as xid), never read"
sim_new --gpus 1 --memory 16384 --reserved 512
timed env GHOSTVRAM_SIM="$SIM" "$GV_BIN" scan --kmsg /dev/zero --call-timeout 2s --confirm 0
assert_eq "$RC" 2 "scan --kmsg /dev/zero"
quick
grep -q "/dev/zero: not a regular file" <<<"$ERR" || fail "scan --kmsg /dev/zero says: $ERR"

note "a simulated host whose kmsg is /dev/zero"
ln -s /dev/zero "$SIM/kmsg"
timed env GHOSTVRAM_SIM="$SIM" "$GV_BIN" xid
quick
grep -q "$SIM/kmsg: not a regular file" <<<"$ERR" || fail "xid on the simulated host says: $ERR (rc $RC)"
rm "$SIM/kmsg"

note "a kernel log larger than the cap is refused before it is read"
truncate -s 300M "$GV_TMP/huge.log"
timed "$GV_BIN" xid --kmsg "$GV_TMP/huge.log"
assert_eq "$RC" 2 "xid --kmsg huge"
quick
grep -q "too large (300 MiB; at most 256 MiB)" <<<"$ERR" || fail "huge log: $ERR"
rm "$GV_TMP/huge.log"

note "bundles: a FIFO or a huge nvml.json, a FIFO host.json"
sim_run --gpu 0 --mib 1024 --workers 1
kill_wait "$OWNER"
B="$GV_TMP/bundle"
GHOSTVRAM_SIM="$SIM" "$GV_BIN" scan --confirm 0 --save-bundle "$B" >/dev/null || true
[ -f "$B/nvml.json" ] && [ -f "$B/host.json" ] || fail "no bundle saved"
for f in nvml.json host.json; do
        cp -r "$B" "$GV_TMP/b.$f"
        rm "$GV_TMP/b.$f/$f"
        mkfifo "$GV_TMP/b.$f/$f"
        timed "$GV_BIN" scan --from-bundle "$GV_TMP/b.$f" --call-timeout 1s
        assert_eq "$RC" 2 "bundle with a FIFO $f"
        quick
        grep -q "$GV_TMP/b.$f/$f is not a regular file (a FIFO)" <<<"$ERR" || fail "FIFO $f: $ERR"
done
cp -r "$B" "$GV_TMP/b.huge"
truncate -s 200M "$GV_TMP/b.huge/nvml.json"
timed "$GV_BIN" scan --from-bundle "$GV_TMP/b.huge" --json
quick
jq -r '.driver.error // .error // empty' <<<"$OUT" | grep -q "nvml.json: too large (more than 32 MiB)" ||
        grep -q "nvml.json: too large (more than 32 MiB)" <<<"$OUT$ERR" || fail "huge nvml.json: $OUT $ERR"

note "a process entry of a bundle that is a symlink is said, not silently dropped"
W=${WORKERS[0]}
cp -r "$B" "$GV_TMP/b.link"
mv "$GV_TMP/b.link/proc/$W" "$GV_TMP/elsewhere"
ln -s "$GV_TMP/elsewhere" "$GV_TMP/b.link/proc/$W"
timed "$GV_BIN" scan --from-bundle "$GV_TMP/b.link"
grep -q "1 process entry of .*proc is not a directory (a symbolic link?) and is left out, not followed: $W" <<<"$OUT" ||
        fail "symlink not said: $OUT"

note "--save-bundle: a file or a non-empty directory is refused, naming the path"
timed "$GV_BIN" scan --save-bundle /etc/passwd
assert_eq "$RC" 2 "--save-bundle /etc/passwd"
grep -q "save-bundle /etc/passwd: not a directory" <<<"$ERR" || fail "message: $ERR"
timed env GHOSTVRAM_SIM="$SIM" "$GV_BIN" scan --confirm 0 --save-bundle "$B"
assert_eq "$RC" 2 "--save-bundle into a non-empty directory"
grep -q "save-bundle $B: not empty" <<<"$ERR" || fail "message: $ERR"
echo "PASS"
