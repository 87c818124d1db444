#!/usr/bin/env bash
# Host shared memory set apart (docs/doctor.md host-shm, docs/json.md host_shared_memory): a
# simulated host's DIR/dev/shm, DIR/proc/sysvipc/shm and DIR/proc/meminfo; scan's note after
# the GPUs and its JSON object with the exact sizes and owners, doctor's host-shm (info when
# large, ok when small); then a real System V segment made by a process (ctypes shmget/shmat,
# marked removed while attached), read from a copy of the kernel's /proc/sysvipc/shm.
. "$(dirname "$0")/lib.sh"
need_tool jq jq
need_tool python3 python3
MIB=1048576
ME=$(id -u)
MYNAME=$(id -un)

sim_new --gpus 1
mkdir -p "$SIM/dev/shm" "$SIM/proc/sysvipc"
head -c $((6 * MIB)) /dev/zero | tr '\0' x >"$SIM/dev/shm/torch_123_a"
head -c $((3 * MIB)) /dev/zero | tr '\0' x >"$SIM/dev/shm/torch_123_b"
head -c $((1 * MIB)) /dev/zero | tr '\0' x >"$SIM/dev/shm/nccl-shm"
mkdir "$SIM/dev/shm/a dir"     # not walked, counted
sleep 600 &
CREATOR=$!
track "$CREATOR"
{
        echo "       key      shmid perms                  size  cpid  lpid nattch   uid   gid  cuid  cgid      atime      dtime      ctime                   rss                  swap"
        printf '%10d %10d  %4o %21d %5d %5d  %5d %5d %5d %5d %5d %10d %10d %10d %21d %21d\n' \
                0 32769 01600 $((4 * MIB)) "$CREATOR" "$CREATOR" 1 "$ME" 0 "$ME" 0 1700000100 0 1700000000 $MIB 0 \
                1234 32770 0600 $((64 * MIB)) "$CREATOR" 4243 0 "$ME" 0 "$ME" 0 0 0 1700000000 $MIB 0
        echo "not a segment line"
} >"$SIM/proc/sysvipc/shm"
# a host of 100 MiB: 10% is 10 MiB, under 1 GiB, so 12 MiB is large
printf 'MemTotal:         102400 kB\nMemFree:           10240 kB\nShmem:             12288 kB\nShmemHugePages:        0 kB\n' \
        >"$SIM/proc/meminfo"
gvs() { GHOSTVRAM_SIM="$SIM" "$GV_BIN" "$@"; }

note "scan --json: host_shared_memory with the sizes and owners"
gvs scan --json --confirm 0 >"$GV_TMP/scan.json"
H() { jq -c ".host_shared_memory$1" "$GV_TMP/scan.json"; }
assert_eq "$(H '| [.large, .total_bytes, .total_source, .threshold_bytes, .mem_total_bytes, .shmem_bytes, .gpu_memory]')" \
        "[true,$((12 * MIB)),\"meminfo\",$((10 * MIB)),$((100 * MIB)),$((12 * MIB)),false]" "the headline and the rule"
assert_eq "$(H '.dev_shm | [.path, .filesystem, .used_bytes, .file_count, .skipped_dir_count, .complete]')" \
        "[\"$SIM/dev/shm\",\"directory\",$((10 * MIB)),3,1,true]" "/dev/shm"
assert_eq "$(H '.dev_shm.largest | map([.name, .size_bytes, .uid, .user])')" \
        "[[\"torch_123_a\",$((6 * MIB)),$ME,\"$MYNAME\"],[\"torch_123_b\",$((3 * MIB)),$ME,\"$MYNAME\"],[\"nccl-shm\",$MIB,$ME,\"$MYNAME\"]]" \
        "the largest files, largest first, with their owner"
assert_eq "$(H '.dev_shm.owners')" "[{\"uid\":$ME,\"user\":\"$MYNAME\",\"file_count\":3,\"size_bytes\":$((10 * MIB))}]" "owners"
assert_eq "$(H '.sysv | [.segment_count, .occupied_bytes, .skipped_line_count, .creator_pids]')" \
        "[2,$((2 * MIB)),1,[$CREATOR]]" "SysV: two segments, one line skipped"
assert_eq "$(H '.sysv.segments | map([.key, .shmid, .size_bytes, .rss_bytes, .creator_pid, .last_pid, .attach_count, .uid, .user, .removed])')" \
        "[[0,32769,$((4 * MIB)),$MIB,$CREATOR,$CREATOR,1,$ME,\"$MYNAME\",true],[1234,32770,$((64 * MIB)),$MIB,$CREATOR,4243,0,$ME,\"$MYNAME\",false]]" \
        "the segments"

note "scan's text: one note after the GPUs"
gvs scan --confirm 0 >"$GV_TMP/scan.txt"
want="host shared memory 12.0 MiB ($SIM/dev/shm 10.0 MiB: 3 files of user $MYNAME; SysV 2.0 MiB: 2 segments of PID $CREATOR) — this is host RAM, not GPU memory; nvidia-smi's used figure does not include it (free -h counts it under shared and buff/cache)"
assert_eq "$(tail -1 "$GV_TMP/scan.txt")" "$want" "the note"
grep -n '^GPU 0 ' "$GV_TMP/scan.txt" >/dev/null || fail "no GPU before the note: $(cat "$GV_TMP/scan.txt")"

note "doctor: host-shm is info, with evidence and a next step; exit 0"
rc=0
gvs doctor --json >"$GV_TMP/d.json" || rc=$?
assert_eq "$rc" 0 "info does not warn"
F() { jq -r --arg f "$1" '[.findings[] | select(.code == "host-shm") | .[$f]] | first' "$GV_TMP/d.json"; }
assert_eq "$(F level)" info "host-shm level"
assert_eq "$(F gpu_index)" null "a host finding"
assert_eq "$(F summary)" "host shared memory is 12.0 MiB, over the 10.0 MiB threshold: host RAM, not GPU memory; nvidia-smi's used figure does not include it" "summary"
F evidence | grep -F "SysV 2.0 MiB: 2 segments of PID $CREATOR" >/dev/null || fail "evidence: $(F evidence)"
F evidence | grep -F "Shmem in /proc/meminfo" >/dev/null || fail "evidence names its source: $(F evidence)"
F next_step | grep -F "\`ls -laS $SIM/dev/shm\`" >/dev/null || fail "next step: $(F next_step)"
F next_step | grep -F "\`cat $SIM/proc/sysvipc/shm\`" >/dev/null || fail "next step (the simulated host's file): $(F next_step)"
gvs doctor >"$GV_TMP/d.txt" || true
grep -E '^info +host +host-shm +host shared memory is 12.0 MiB' "$GV_TMP/d.txt" >/dev/null || fail "doctor's text: $(cat "$GV_TMP/d.txt")"

note "without Shmem the parts are the figure; 12 MiB of a host of unknown size is small"
rm "$SIM/proc/meminfo"
gvs scan --json --confirm 0 >"$GV_TMP/scan.json"
assert_eq "$(H '| [.large, .total_bytes, .total_source, .threshold_bytes, .mem_total_bytes]')" \
        "[false,$((12 * MIB)),\"parts\",1073741824,null]" "the parts, 1 GiB"
gvs scan --confirm 0 >"$GV_TMP/scan.txt"
grep -F 'host shared memory' "$GV_TMP/scan.txt" >/dev/null && fail "a small one is not noted: $(cat "$GV_TMP/scan.txt")"
gvs doctor --json >"$GV_TMP/d.json" || true
assert_eq "$(F level)" ok "host-shm small"
assert_eq "$(F summary)" "host shared memory is 12.0 MiB, below 1.0 GiB" "small summary"
assert_eq "$(F next_step)" null "nothing to do"

note "nothing to read: unknown, and scan has no object"
rm -r "$SIM/dev/shm" "$SIM/proc/sysvipc"
gvs scan --json --confirm 0 >"$GV_TMP/scan.json"
assert_eq "$(jq 'has("host_shared_memory")' "$GV_TMP/scan.json")" false "no object when nothing was read"
gvs doctor --json >"$GV_TMP/d.json" || true
assert_eq "$(F level)" unknown "host-shm unknown"

note "a real System V segment (shmget, shmat, IPC_RMID while attached), read by the kernel's format"
cat >"$GV_TMP/seg.py" <<'PY'
import ctypes, sys, time
libc = ctypes.CDLL(None, use_errno=True)
libc.shmget.argtypes = [ctypes.c_int, ctypes.c_size_t, ctypes.c_int]
libc.shmat.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
libc.shmat.restype = ctypes.c_void_p
libc.shmctl.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
size = 3 << 20
sid = libc.shmget(0, size, 0o1000 | 0o600)  # IPC_PRIVATE, IPC_CREAT
if sid < 0:
        sys.exit("shmget: errno %d" % ctypes.get_errno())
addr = libc.shmat(sid, None, 0)
if addr in (None, ctypes.c_void_p(-1).value):
        sys.exit("shmat: errno %d" % ctypes.get_errno())
ctypes.memset(addr, 1, size)                   # every page resident
libc.shmctl(sid, 0, None)                      # IPC_RMID: gone at the last detach (our exit)
print(sid, flush=True)
time.sleep(600)
PY
python3 "$GV_TMP/seg.py" >"$GV_TMP/seg.out" &
SEG=$!
track "$SEG"
wait_for_line "$GV_TMP/seg.out" '^[0-9]'
SHMID=$(head -1 "$GV_TMP/seg.out")
R="$GV_TMP/root"
mkdir -p "$R/proc/sysvipc"
# the kernel's header and this test's own segment: the host's other segments (another test's,
# a database's, made in a PID namespace this test cannot see) are not this test's to judge
awk -v id="$SHMID" 'NR == 1 || $2 == id' /proc/sysvipc/shm >"$R/proc/sysvipc/shm"
assert_eq "$(wc -l <"$R/proc/sysvipc/shm")" 2 "the kernel's header and the segment's line"
gvs doctor --root "$R" --json >"$GV_TMP/d.json" || true
assert_eq "$(F level)" ok "3 MiB is small"
F evidence | grep -F "SysV 3.0 MiB: 1 segment of PID $SEG)" >/dev/null ||
        fail "the real segment: $(F evidence) ($(cat "$R/proc/sysvipc/shm"))"
kill_wait "$SEG"
# the kernel's own file, parsed: the segment by its shmid, with its creator, rss and the removed bit
python3 - "$R/proc/sysvipc/shm" "$SHMID" "$SEG" <<'PY' || fail "the kernel's line for shmid $SHMID"
import sys
rows = [l.split() for l in open(sys.argv[1])]
h = rows[0]
r = [x for x in rows[1:] if x[h.index("shmid")] == sys.argv[2]][0]
assert r[h.index("cpid")] == sys.argv[3], r
assert int(r[h.index("size")]) == 3 << 20, r
assert int(r[h.index("perms")], 8) & 0o1000, r
PY
true
