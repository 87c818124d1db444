#!/usr/bin/env bash
# bench/chaos.sh BUILD_DIR [SECONDS] [SEED]: the chaos run of tests/integration/t_serve_chaos.sh
# (serve and watch --reclaim on a simulated 4-GPU host while jobs start and die and the
# driver's faults come and go) for SECONDS (default 600) instead of the test's 60, with all of
# the test's assertions, and its figures as a markdown section for bench/README.md ("chaos"):
# cycles, scrapes and the slowest, heals, and serve's and watch's threads, descriptors and
# RSS (peak, plateau, anonymous part). SEED defaults to the test's (2126). The run's log,
# serve's and watch's output, every scrape and every sample are kept in CHAOS_KEEP (default
# a new /tmp/gv-bench-chaos.XXXXXX, printed).
set -euo pipefail
build=$(cd "${1:?usage: bench/chaos.sh BUILD_DIR [SECONDS] [SEED]}" && pwd)
secs=${2:-600}
seed=${3:-2126}
src=$(cd "$(dirname "$0")/.." && pwd)
[ -x "$build/ghostvram" ] || { echo "chaos.sh: $build/ghostvram is missing" >&2; exit 1; }
keep=${CHAOS_KEEP:-$(mktemp -d /tmp/gv-bench-chaos.XXXXXX)}
out=$keep/test.out
mkdir -p "$keep"
rc=0
GV_BIN=$build/ghostvram GV_BUILD=$build GV_SRC=$src GV_CHAOS_SECONDS=$secs GV_CHAOS_SEED=$seed GV_CHAOS_KEEP=$keep \
        bash "$src/tests/integration/t_serve_chaos.sh" >"$out" 2>&1 || rc=$?

echo "### chaos: $(uname -srm), $(nproc) CPUs, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo '```'
echo "bench/chaos.sh $1 $secs $seed    # $(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo '?')"
grep '^chaos:' "$out" | sed 's/^chaos: //'
# serve's RSS over the run: the first and the last fifth (a plateau, or growth)
awk '$2 == "serve" { t[n] = $1; r[n] = $5; n++ }
     END { if (!n) exit; k = int(n / 5); if (k < 1) k = 1
           for (i = 0; i < k; i++) { if (r[i] > a) a = r[i]; if (r[n - 1 - i] > b) b = r[n - 1 - i] }
           printf "serve RSS, max of the first fifth %.1f MiB, of the last fifth %.1f MiB (%d samples)\n", a / 1024, b / 1024, n }' \
        "$keep/samples"
echo '```'
echo
if [ "$rc" = 0 ]; then
        echo "All of the test's assertions held (PASS). Kept: $keep"
else
        echo "FAILED (exit $rc): $(grep -m1 '^FAIL' "$out" || tail -1 "$out"). Kept: $keep"
fi
exit "$rc"
