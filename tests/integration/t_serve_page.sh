#!/usr/bin/env bash
# serve's page in a real browser: headless Chromium loads `/` from `ghostvram serve` on the
# simulated driver (a killed job's ghost on GPU 1, a live job on GPU 0, a hostile process
# name, a secret in the command line). Checked: the security headers and that the CSP's style
# hash is the style's; nothing external, no script; the DOM as the browser built it (the
# ghost series of GPU 1 at 2048 MiB over the 512 MiB reservation, the workers named with
# their dead owner, the verdicts, the Xid 45, the name escaped, no command line unless
# --expose-cmdline); a screenshot is kept as a test artifact.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/serve_lib.sh"

CHROMIUM=$(command -v chromium || true)
[ -n "$CHROMIUM" ] || fail "chromium is missing: scripts/install-deps --test installs it"
ART="$GV_BUILD/test-artifacts"
mkdir -p "$ART"

# browser ARGS... URL: headless Chromium on loopback only, its own profile, bounded in time
browser() {
        local prof
        prof=$(mktemp -d "$GV_TMP/chromium.XXXXXX")
        timeout 90 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-background-networking \
                --disable-component-update --disable-sync --no-first-run --disable-extensions \
                --user-data-dir="$prof" "$@" 2>"$GV_TMP/chromium.err"
}

sim_new --gpus 2 --memory 16384 --reserved 512
sim_run --gpu 0 --mib 1024
LIVE=$OWNER
sim_run_named '<img src=x onerror=alert(1)>' --gpu 1 --mib 2048 --workers 2 --busy
kill_wait "$OWNER"
W1=${WORKERS[0]} W2=${WORKERS[1]}

START=$(date +%s)
serve_start --interval 1s
wait_until 30 bash -c "[ \"\$(curl -fsS '$URL/metrics' | awk 'index(\$0, \"ghostvram_gpu_memory_used_bytes{gpu=\\\"1\\\"\") == 1 && index(\$0, \"kind=\\\"ghost\\\"\") { print \$NF }')\" = $((2048 * MIB)) ]" ||
        fail "no 2048 MiB ghost on GPU 1 in /metrics"
sleep 3         # a few points in the timeline

note "headers"
curl -fsS -D "$GV_TMP/h.txt" -o "$GV_TMP/page.html" "$URL/" || fail "GET / failed"
hdr() { awk -v k="$1" 'BEGIN { IGNORECASE = 1 } index(tolower($0), tolower(k) ":") == 1 { sub(/^[^:]*: */, ""); sub(/\r$/, ""); print }' "$GV_TMP/h.txt"; }
assert_eq "$(hdr Content-Type)" "text/html; charset=utf-8" "Content-Type"
assert_eq "$(hdr X-Content-Type-Options)" "nosniff" "X-Content-Type-Options"
assert_eq "$(hdr X-Frame-Options)" "DENY" "X-Frame-Options"
csp=$(hdr Content-Security-Policy)
case "$csp" in "default-src 'none'; style-src 'sha256-"*"'; img-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'") ;;
*) fail "Content-Security-Policy: $csp" ;; esac
want=$(python3 -c '
import sys, re, hashlib, base64
html = open(sys.argv[1], encoding="utf-8").read()
m = re.findall(r"<style>(.*?)</style>", html, re.S)
assert len(m) == 1, "not exactly one style element"
print(base64.b64encode(hashlib.sha256(m[0].encode()).digest()).decode())' "$GV_TMP/page.html") || fail "no style"
case "$csp" in *"'sha256-$want'"*) ;; *) fail "the CSP's style hash is not the style's ($want)" ;; esac

note "the timeline starts no earlier than serve started"
from=$(sed -n 's|.*<title id="tl-title-1">GPU 1 memory by kind from \([^ ]*\) to .*|\1|p' "$GV_TMP/page.html")
[ -n "$from" ] || fail "no timeline caption for GPU 1"
[ "$(date -d "$from" +%s)" -ge "$START" ] || fail "the timeline starts at $from, before serve started ($(date -u -d "@$START" +%FT%TZ))"

note "self-contained: no script, nothing external; hostile text escaped; no command line"
grep -qiE '<script|<link|<iframe|<img|<object|@import|url\(' "$GV_TMP/page.html" && fail "an active or external element in the page"
grep -oE '(src|href)="[^"]*"' "$GV_TMP/page.html" | grep -vE '^href="/(metrics|healthz|api/v1/scan)"$' && fail "a link out of the page"
grep -q 'token=hunter2' "$GV_TMP/page.html" && fail "a command line without --expose-cmdline"
grep -q '&lt;img src=x oner' "$GV_TMP/page.html" || fail "the hostile name is not shown escaped"

note "the DOM Chromium built with JavaScript off"
browser --disable-javascript --dump-dom "$URL/" >"$GV_TMP/dom.html" || fail "chromium --dump-dom failed: $(tail -5 "$GV_TMP/chromium.err")"
python3 - "$GV_TMP/dom.html" "$OWNER" "$W1" "$W2" "$LIVE" <<'PY' || fail "DOM checks"
import sys
from html.parser import HTMLParser
dom, owner, w1, w2, live = sys.argv[1], *sys.argv[2:]

class P(HTMLParser):
    def __init__(self):
        super().__init__()
        self.stack, self.paths, self.rows, self.verdicts, self.xids, self.imgs = [], {}, {}, {}, [], 0
        self.row = None
    def handle_starttag(self, tag, a):
        a = dict(a)
        if tag == "img": self.imgs += 1
        if tag == "svg": self.svg = a.get("id")
        if tag == "path" and "series" in a.get("class", ""):
            self.paths[(self.svg, a["data-kind"])] = a.get("d", "")
        if tag == "tr" and "data-pid" in a:
            self.row = a["data-pid"]; self.rows[self.row] = {"role": a.get("data-role"), "cls": a.get("class"), "cells": []}
        if tag == "tr" and "data-xid" in a: self.xids.append(a["data-xid"])
        if tag == "p" and "data-verdict" in a: self.verdicts[len(self.verdicts)] = a["data-verdict"]
        if tag == "td" and self.row: self.rows[self.row]["cells"].append("")
    def handle_endtag(self, tag):
        if tag == "tr": self.row = None
    def handle_data(self, d):
        if self.row and self.rows[self.row]["cells"]: self.rows[self.row]["cells"][-1] += d

p = P(); p.feed(open(dom, encoding="utf-8").read())
def check(c, what):
    if not c: print("DOM:", what, file=sys.stderr); sys.exit(1)
check(p.verdicts.get(0) == "unattributed-live" or p.verdicts.get(0) == "ok", "GPU 0 verdict %r" % p.verdicts.get(0))
check(p.verdicts.get(1) == "orphaned-holders", "GPU 1 verdict %r" % p.verdicts.get(1))
g = p.paths.get(("timeline-gpu1", "ghost"), "")
check(g.startswith("M"), "no ghost series on GPU 1")
# 760x180 box, 8 px top, 22 px bottom: 512 MiB reserved at y=153.3, +2048 ghost at y=134.6
check(",134.6" in g and ",153.3" in g, "ghost band not at 512..2560 MiB: " + g[:200])
for k in ("reserved", "listed", "foreign", "ghost", "unattributed", "freeing"):
    check(("timeline-gpu0", k) in p.paths, "GPU 0 has no %s series" % k)
check(",134.6" not in p.paths[("timeline-gpu0", "ghost")], "a ghost on GPU 0")
for w in (w1, w2):
    r = p.rows.get(w)
    check(r and r["role"] == "worker of dead PID " + owner, "worker %s: %r" % (w, r))
    check("ghost-holder" in r["cls"], "worker %s not marked as a ghost holder" % w)
    check(r["cells"][0] == "1" and r["cells"][-1] == "<img src=x oner", "worker %s cells %r" % (w, r["cells"]))
check(p.rows.get(owner, {}).get("role") == "dead owner", "dead owner row")
check(p.rows.get(owner)["cells"][4] == "2048", "the dead owner's 2048 MiB")
check(p.rows.get(live, {}).get("role") == "owner", "live owner row")
check("45" in p.xids, "no Xid 45 row")
check(p.imgs == 0, "an <img> element in the DOM")
PY

note "a screenshot (kept in $ART)"
rm -f "$ART/serve-page.png"
browser --window-size=1100,1500 --hide-scrollbars --screenshot="$ART/serve-page.png" "$URL/" >/dev/null ||
        fail "chromium --screenshot failed: $(tail -5 "$GV_TMP/chromium.err")"
[ "$(head -c 8 "$ART/serve-page.png" | od -An -tx1 | tr -d ' ')" = 89504e470d0a1a0a ] || fail "the screenshot is not a PNG"
[ "$(stat -c %s "$ART/serve-page.png")" -gt 20000 ] || fail "the screenshot is nearly empty"
serve_stop

note "--expose-cmdline: command lines in the table, escaped"
serve_start --interval 1s --expose-cmdline
wait_until 20 bash -c "curl -fsS '$URL/' | grep -q 'data-pid=\"$W1\"'" || fail "no worker row with --expose-cmdline"
curl -fsS "$URL/" >"$GV_TMP/page2.html"
grep -q "token=hunter2/&lt;img src=x onerror=alert(1)&gt; --dir" "$GV_TMP/page2.html" || fail "no escaped command line with --expose-cmdline"
grep -q '<img' "$GV_TMP/page2.html" && fail "an unescaped <img in the page"
serve_stop

note "a hung driver: the page still answers, stale, with the reason and the last data"
serve_start --interval 1s --stale-after 3s --call-timeout 500ms
wait_until 20 bash -c "curl -fsS '$URL/' | grep -q 'data-verdict=\"orphaned-holders\"'" || fail "no ghost before the hang"
"$GV_BIN" sim set "$SIM" hang=any
wait_until 20 bash -c "curl -fsS --max-time 2 '$URL/' | grep -q '<p class=\"status bad\" id=\"status\">Data from .* (stale)\. Latest collection: the NVIDIA driver'" ||
        fail "the page does not say it is stale: $(curl -s "$URL/" | grep 'id="status"')"
# at once, from the last data: well under 2 s on a loaded machine (a page that waited for the
# hung collection would never come: curl gives up after 5 s)
t=$(curl -fsS --max-time 5 -o "$GV_TMP/page3.html" -w '%{time_total}' "$URL/") || fail "the page did not answer during the hang"
awk -v t="$t" 'BEGIN { exit !(t < 2) }' || fail "the page took $t s during the hang"
grep -q 'data-verdict="orphaned-holders"' "$GV_TMP/page3.html" || fail "the last data is gone during the hang"
"$GV_BIN" sim set "$SIM" hang=none
serve_stop
echo "PASS"
