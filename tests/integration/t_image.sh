#!/usr/bin/env bash
# packaging/Dockerfile built for real with podman and run as deploy/kubernetes/ghostvram-daemonset.yaml
# runs it (host PID namespace, read-only root, every capability dropped but SYS_PTRACE,
# DAC_READ_SEARCH and SYSLOG, /dev/kmsg mounted, a tmpfs /tmp), on a simulated host made from
# OUTSIDE the container: /healthz answers, /metrics carries the ghost's bytes, /api/v1/scan names
# the holders by their host PIDs; the NPD plugin of deploy/kubernetes/ghostvram-npd.yaml runs in
# the same image; the Chinese catalogue is in it; its size is printed (docs/container.md).
#
# No registry is needed: the base (Debian 12 minbase) is imported from a tarball, GV_IMAGE_BASE_TAR
# when set, else made here with debootstrap from the host's Debian mirror. The build stage's
# apt-get reaches that mirror through the host's network (--network=host). Everything podman
# makes lives in a storage of its own under GV_TMP, removed at exit: the host's images are not touched.
# runc, not crun: crun refuses hosts with cgroup v1 controllers beside a cgroup2 mount ("hybrid").
# Explicit ulimits: podman's root defaults (nofile and nproc raised to 1048576 / 4194304) need
# CAP_SYS_RESOURCE, which a sandboxed root may lack.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/serve_lib.sh"
: "${GV_SRC:?GV_SRC must name the source tree}"
need_tool podman podman
need_tool runc runc
need_tool curl curl
need_tool jq jq
python3 -c 'import yaml' 2>/dev/null || fail "python3-yaml is missing (scripts/install-deps --test)"
[ "$(id -u)" -eq 0 ] || skip "podman with --pid=host on another user's processes needs root"

ST=$GV_TMP/podman
TAG=localhost/ghostvram-it:$$
BASE=localhost/gv-it-debian:bookworm-slim
CTR=gv-it-serve-$$
P=(podman --root "$ST/root" --runroot "$ST/run" --storage-driver overlay --runtime "$(command -v runc)"
   --cgroup-manager cgroupfs --events-backend file)
LIMITS=(--ulimit "nofile=$(( $(ulimit -Hn) < 4096 ? $(ulimit -Hn) : 4096 )):$(( $(ulimit -Hn) < 4096 ? $(ulimit -Hn) : 4096 ))"
        --ulimit nproc=1000:1000)
# bounded removal of what this test made: the serving container, then the whole storage
image_cleanup() {
        timeout 30 "${P[@]}" rm -f -t 0 "$CTR" >/dev/null 2>&1 || true
        timeout 60 "${P[@]}" rmi -a -f >/dev/null 2>&1 || true
        # (not `system reset`: that would also remove the host's podman networks)
        local m
        for m in $(awk -v d="$ST/" 'index($2, d) == 1 { print $2 }' /proc/mounts | sort -r); do umount "$m" 2>/dev/null || true; done
}
gv_on_exit image_cleanup

note "the base image: Debian 12 minbase, made slim, imported from a tarball"
RFS=$GV_TMP/rootfs
if [ -n "${GV_IMAGE_BASE_TAR:-}" ]; then
        mkdir "$RFS" && tar -C "$RFS" -xf "$GV_IMAGE_BASE_TAR" || fail "cannot unpack $GV_IMAGE_BASE_TAR"
else
        need_tool debootstrap debootstrap
        mirror=$(awk '$1 == "URIs:" { print $2; exit } $1 == "deb" { print $2; exit }' \
                /etc/apt/sources.list.d/debian.sources /etc/apt/sources.list 2>/dev/null || true)
        timeout 900 debootstrap --variant=minbase bookworm "$RFS" "${mirror:-http://deb.debian.org/debian}" \
                >"$GV_TMP/debootstrap.log" 2>&1 || fail "debootstrap: $(tail -5 "$GV_TMP/debootstrap.log")"
fi
grep '^12\.' "$RFS/etc/debian_version" >/dev/null ||
        fail "the base is not Debian 12: $(cat "$RFS/etc/debian_version" 2>/dev/null)"
# what debian:bookworm-slim leaves out (debuerreotype's slimify): apt's lists and downloaded
# packages, documentation but the copyrights, manuals, translations; the dpkg rule keeps them out
# of what the image's own apt-get installs later (a debootstrap tree is 200 MB, slim 75 MB)
rm -rf "$RFS"/var/lib/apt/lists/* "$RFS"/var/cache/apt/*.bin "$RFS"/var/cache/apt/archives/*.deb \
        "$RFS"/usr/share/man/* "$RFS"/usr/share/info/* "$RFS"/usr/share/locale/*
find "$RFS/usr/share/doc" -mindepth 1 ! -name copyright ! -type d -delete
mkdir -p "$RFS/etc/dpkg/dpkg.cfg.d"
printf '%s\n' 'path-exclude /usr/share/doc/*' 'path-include /usr/share/doc/*/copyright' 'path-exclude /usr/share/man/*' \
        'path-exclude /usr/share/info/*' 'path-exclude /usr/share/locale/*' >"$RFS/etc/dpkg/dpkg.cfg.d/docker"
# and debian:bookworm-slim's apt settings: no package caches or downloaded packages kept after an
# install, no translations fetched (without them the run stage keeps ~60 MB of apt's caches)
clean='"rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"'
printf '%s\n' "DPkg::Post-Invoke { $clean; };" "APT::Update::Post-Invoke { $clean; };" \
        'Dir::Cache::pkgcache "";' 'Dir::Cache::srcpkgcache "";' >"$RFS/etc/apt/apt.conf.d/docker-clean"
echo 'Acquire::Languages "none";' >"$RFS/etc/apt/apt.conf.d/docker-no-languages"
tar -C "$RFS" -cf "$GV_TMP/base.tar" . && rm -rf "$RFS"
tarball=$GV_TMP/base.tar
timeout 300 "${P[@]}" import "$tarball" "$BASE" >/dev/null || fail "podman import $tarball failed"
timeout 60 "${P[@]}" run --rm --network=host "${LIMITS[@]}" "$BASE" true ||
        fail "podman cannot run a container here (the base, /bin/true)"

note "podman build -f packaging/Dockerfile (build stage from source, run stage with the libraries)"
timeout 1500 "${P[@]}" build --network=host "${LIMITS[@]}" --build-arg "BASE=$BASE" \
        -f "$GV_SRC/packaging/Dockerfile" -t "$TAG" "$GV_SRC" >"$GV_TMP/build.log" 2>&1 ||
        fail "podman build: $(tail -30 "$GV_TMP/build.log")"
size=$("${P[@]}" image inspect --format '{{.Size}}' "$TAG")
echo "image $TAG: $size bytes ($((size / MIB)) MiB)"
[ "$size" -lt $((120 * MIB)) ] || fail "the image is $((size / MIB)) MiB (85 MiB in docs/container.md)"
R=("${P[@]}" run --rm --network=host "${LIMITS[@]}" --read-only)
version=$("${R[@]}" "$TAG" --version) || fail "ghostvram --version in the image"
assert_eq "$version" "$("$GV_BIN" --version)" "the image's version"
for f in /usr/lib/ghostvram/sim/current/libnvidia-ml.so.1 /usr/share/locale/zh_CN/LC_MESSAGES/ghostvram.mo; do
        "${R[@]}" --entrypoint /bin/sh "$TAG" -c "test -s $f" || fail "the image lacks $f"
done
out=$("${R[@]}" -e LANG=zh_CN.UTF-8 "$TAG" scan --help) || fail "scan --help in Chinese"
grep -Fx "用法：ghostvram scan [选项]" <<<"$out" >/dev/null || fail "no Chinese usage line in the image: $(head -3 <<<"$out")"

note "a classic ghost on the simulated host, made outside the container"
sim_new --gpus 1 --memory 16384 --reserved 512
sim_run --gpu 0 --mib 2048 --workers 2
kill_wait "$OWNER"

note "serve in the container as the DaemonSet runs it"
PORT=$(free_port)
URL=http://127.0.0.1:$PORT
# the simulated host at its own path: the holders' descriptors name it (/proc/PID/fd links)
RUNC=("${P[@]}" run -d --name "$CTR" --network=host --pid=host "${LIMITS[@]}" --read-only --tmpfs /tmp
      --cap-drop=all --cap-add=SYS_PTRACE,DAC_READ_SEARCH,SYSLOG --security-opt no-new-privileges
      -v /dev/kmsg:/dev/kmsg:ro -v "$SIM:$SIM" -e "GHOSTVRAM_SIM=$SIM")
timeout 60 "${RUNC[@]}" "$TAG" serve --listen="127.0.0.1:$PORT" --interval=1s >/dev/null ||
        fail "podman run serve failed"
logs() { timeout 10 "${P[@]}" logs "$CTR" 2>&1 | tail -20; }
wait_until 60 bash -c "curl -fsS '$URL/healthz' >/dev/null" || fail "/healthz never turned 200: $(curl -s "$URL/healthz"); $(logs)"
wait_until 30 bash -c "curl -fsS '$URL/metrics' | grep 'ghostvram_gpu_ghost_confirmed{gpu=\"0\".*} 1' >/dev/null" ||
        fail "the ghost was never confirmed: $(scrape | grep ghost); $(logs)"
assert_eq "$(ghost_of 0)" $((2048 * MIB)) "the ghost's bytes in /metrics"
curl -fsS --max-time 10 "$URL/api/v1/scan" >"$GV_TMP/scan.json" || fail "/api/v1/scan"
assert_eq "$(jq -r '.gpus[0].verdict' "$GV_TMP/scan.json")" orphaned-holders "the verdict"
want=$(printf '%s\n' "${WORKERS[@]}" | sort -n | tr '\n' ' ')
assert_eq "$(jq -r '[.holders[].pid] | sort | map(tostring) | join(" ")' "$GV_TMP/scan.json") " "$want" \
        "the holders by their host PIDs"

note "the NPD plugin (ghostvram-npd.yaml's ConfigMap) in the same image"
mkdir -p "$GV_TMP/config"
python3 - "$GV_SRC/deploy/kubernetes/ghostvram-npd.yaml" "$GV_TMP/config" <<'PY' || fail "the plugin script"
import os, sys, yaml
cm = next(d for d in yaml.safe_load_all(open(sys.argv[1])) if d["kind"] == "ConfigMap")
p = os.path.join(sys.argv[2], "ghostvram-npd-check.sh")
open(p, "w").write(cm["data"]["ghostvram-npd-check.sh"])
os.chmod(p, 0o555)
PY
rc=0
out=$(timeout 60 "${P[@]}" run --rm --network=host --pid=host "${LIMITS[@]}" --read-only --tmpfs /tmp \
        --cap-drop=all --cap-add=SYS_PTRACE,DAC_READ_SEARCH -v "$GV_TMP/config:/config:ro" -v "$SIM:$SIM" \
        -e "GHOSTVRAM_SIM=$SIM" --entrypoint /bin/sh "$TAG" /config/ghostvram-npd-check.sh) || rc=$?
assert_eq "$rc" 1 "the plugin's exit status (a problem); output '$out'"
assert_eq "$out" "GPU 0: 2048 MiB ghost (orphaned-holders, PIDs $OWNER ${WORKERS[*]})" "the plugin's message"

note "the workers end: the ghost is gone from the container's view"
kill_wait "${WORKERS[@]}"
wait_until 30 bash -c "[ \"\$(curl -fsS '$URL/api/v1/scan' | jq -r '.gpus[0].verdict')\" = ok ]" ||
        fail "no ok verdict after the workers ended: $(curl -s "$URL/api/v1/scan" | jq -c '.gpus[0].verdict')"
echo "PASS (image $((size / MIB)) MiB)"
