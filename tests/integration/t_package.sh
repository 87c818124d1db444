#!/usr/bin/env bash
# Packaging: `make install` into a DESTDIR under a prefix puts everything where it belongs (the
# binary, the simulated driver demo needs, the man page with EXAMPLES and every command's exit
# status, bash/zsh/fish completions, systemd units and the cron line naming that prefix, deploy
# examples) and runs from there; the Debian package (scripts/build-deb) is lintian-clean, unpacks
# and runs; the container recipe is Debian, builds what install-deps lists and installs every
# library the binary links, under the image name the Kubernetes manifest uses.
. "$(dirname "$0")/lib.sh"
: "${GV_SRC:?GV_SRC must name the source tree}"
need_tool jq jq
need_tool lintian lintian
need_tool dpkg-deb dpkg
need_tool dpkg-shlibdeps dpkg-dev
version=$("$GV_BIN" --version | awk '{print $2}')
[ -n "$version" ] || fail "no version"
cmds=$("$GV_BIN" --help | sed -n 's/^  \([a-z][a-z]*\) .*/\1/p' | sort)
[ "$(wc -l <<<"$cmds")" -ge 12 ] || fail "commands from --help: $cmds"

note "make install PREFIX=/opt/gv DESTDIR=…: the recipe, then the tree it makes"
grep -q 'DESTDIR="$(DESTDIR)" cmake --install $(BUILD) --prefix "$(PREFIX)"' "$GV_SRC/Makefile" || fail "Makefile install recipe"
D=$GV_TMP/dest P=/opt/gv
DESTDIR=$D cmake --install "$GV_BUILD" --prefix "$P" >/dev/null
R=$D$P
for f in bin/ghostvram lib/ghostvram/sim/gv-simcuda lib/ghostvram/sim/gv-simteardown share/man/man1/ghostvram.1 \
         share/bash-completion/completions/ghostvram share/zsh/vendor-completions/_ghostvram \
         share/fish/vendor_completions.d/ghostvram.fish lib/systemd/system/ghostvram-serve.service \
         lib/systemd/system/ghostvram-textfile.service lib/systemd/system/ghostvram-textfile.timer \
         share/ghostvram/deploy/prometheus/ghostvram-rules.yml share/ghostvram/deploy/grafana/ghostvram-dashboard.json \
         share/ghostvram/deploy/kubernetes/ghostvram-daemonset.yaml share/ghostvram/deploy/cron/ghostvram-doctor \
         share/doc/ghostvram/doctor.md share/doc/ghostvram/faq.md share/doc/ghostvram/README.zh-CN.md \
         share/doc/ghostvram/zh-CN/faq.md share/doc/ghostvram/zh-CN/verdicts.md share/doc/ghostvram/zh-CN/reclaim.md; do
        [ -s "$R/$f" ] || fail "$P/$f not installed"
done
[ -x "$R/bin/ghostvram" ] || fail "the binary is not executable"
for v in $(ls "$GV_BUILD/sim" | grep -E '^(current|[0-9.]+)$'); do
        [ -s "$R/lib/ghostvram/sim/$v/libnvidia-ml.so.1" ] || fail "simulated driver $v not installed"
done
assert_eq "$(grep -h '^ExecStart=' "$R"/lib/systemd/system/*.service | cut -d' ' -f1 | sort -u)" "ExecStart=$P/bin/ghostvram" "units' ExecStart"
grep -q "^17 6 \* \* \* root $P/bin/ghostvram doctor " "$R/share/ghostvram/deploy/cron/ghostvram-doctor" || fail "cron line"
grep -rq '/usr/bin/ghostvram' "$R/lib/systemd/system" "$R/share/ghostvram/deploy/cron" && fail "a unit or the cron line still names /usr/bin"

note "the man page: EXAMPLES, and an exit status for every command"
man=$R/share/man/man1/ghostvram.1
grep -q '^\.SH EXAMPLES' "$man" || fail "no EXAMPLES section"
exits=$(sed -n '/^\.SH EXIT STATUS/,/^\.SH /p' "$man")
for c in $cmds; do
        grep -A1 '^\.TP' <<<"$exits" | grep -qE "^\.B .*\b$c\b" || fail "man page: no exit status for $c"
        grep -qE "^\.B ghostvram $c\b" "$man" || fail "man page: $c not in the synopsis"
done
MANWIDTH=80 man -l "$man" 2>"$GV_TMP/man.err" >/dev/null || fail "man cannot render the page"
[ -s "$GV_TMP/man.err" ] && fail "man warns: $(cat "$GV_TMP/man.err")"

note "the installed binary runs, and demo uses the installed simulated driver"
assert_eq "$("$R/bin/ghostvram" --version)" "ghostvram $version" "--version"
"$R/bin/ghostvram" sim init "$GV_TMP/s" >/dev/null
lib=$(GHOSTVRAM_SIM=$GV_TMP/s "$R/bin/ghostvram" snapshot --json | jq -r .driver.library)
assert_eq "$lib" "$R/bin/../lib/ghostvram/sim/current/libnvidia-ml.so.1" "the library an installed ghostvram loads"
timeout 120 "$R/bin/ghostvram" demo >"$GV_TMP/demo.out" 2>&1 || fail "demo from the install: $(tail -5 "$GV_TMP/demo.out")"
grep -q '^Demo over' "$GV_TMP/demo.out" || fail "demo did not finish: $(tail -3 "$GV_TMP/demo.out")"

note "completions: every command, options read from the binary"
for f in share/bash-completion/completions/ghostvram share/fish/vendor_completions.d/ghostvram.fish; do
        listed=$(grep -oE 'scan snapshot[a-z ]*' "$R/$f" | head -1 | tr ' ' '\n' | grep -v '^help$' | sort)
        assert_eq "$listed" "$cmds" "commands in $f"
done
grep -q "ghostvram --help" "$R/share/zsh/vendor-completions/_ghostvram" || fail "zsh reads the commands from --help"
complete_words() { # WORDS...: what bash would offer for the last word
        bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _ghostvram; printf "%s\n" "${COMPREPLY[@]}"' \
                _ "$R/share/bash-completion/completions/ghostvram" "$@"
}
PATH=$R/bin:$PATH
assert_eq "$(complete_words ghostvram do)" doctor "bash: command"
assert_eq "$(complete_words ghostvram doctor --exp)" --explain "bash: doctor's option"
assert_eq "$(complete_words ghostvram help doc)" doctor "bash: help CMD"
grep -qx -- --no-kernel <<<"$(complete_words ghostvram scan --no)" || fail "bash: scan --no-kernel"
# fish and zsh run their own files: fish's `complete -C` asks what it would offer; zsh's
# function runs with the completion system's builtins replaced by ones that print what they get
need_tool fish fish
need_tool zsh zsh
fish_complete() { fish --no-config -c "source '$R/share/fish/vendor_completions.d/ghostvram.fish'; complete -C '$1'"; }
assert_eq "$(fish_complete 'ghostvram do')" doctor "fish: command"
assert_eq "$(fish_complete 'ghostvram doctor --exp')" --explain "fish: doctor's option"
assert_eq "$(fish_complete 'ghostvram help doc')" doctor "fish: help CMD"
grep -qx -- --no-kernel <<<"$(fish_complete 'ghostvram scan --no')" || fail "fish: scan --no-kernel"
zsh_complete() { # CURRENT PREFIX WORDS...
        zsh -f -c '
_describe() { print -l -- ${(P)${@[-1]}}; }
compadd() { [[ $1 == -- ]] && shift; print -l -- "$@"; }
_call_program() { shift; eval "$@"; }
_files() { print -- "(files)"; }
source "$1" >/dev/null 2>&1
CURRENT=$2 PREFIX=$3; shift 3; words=("$@"); _ghostvram' _ "$R/share/zsh/vendor-completions/_ghostvram" "$@"
}
grep -qx 'doctor:check the setup.*' <<<"$(zsh_complete 2 do ghostvram do)" || fail "zsh: command with its summary"
grep -qx -- --explain <<<"$(zsh_complete 3 --exp ghostvram doctor --exp)" || fail "zsh: doctor's option"
grep -qx 'scan:account for every byte.*' <<<"$(zsh_complete 3 sc ghostvram help sc)" || fail "zsh: help CMD"
assert_eq "$(zsh_complete 3 x ghostvram xid x)" "(files)" "zsh: files after a command"

note "the Debian package: lintian without errors; it unpacks and runs"
deb=$("$GV_SRC/scripts/build-deb" "$GV_BUILD" "$GV_TMP/deb")
[ -s "$deb" ] || fail "no package"
assert_eq "$(dpkg-deb -f "$deb" Version)" "$version" "package version"
dpkg-deb -f "$deb" Depends | grep -q 'libjansson4' || fail "Depends: $(dpkg-deb -f "$deb" Depends)"
lintian --tag-display-limit 0 "$deb" >"$GV_TMP/lintian.out" 2>&1 || true
grep -q '^E: ' "$GV_TMP/lintian.out" && fail "lintian errors: $(grep '^E: ' "$GV_TMP/lintian.out")"
grep -q '^W: ' "$GV_TMP/lintian.out" && fail "lintian warnings: $(grep '^W: ' "$GV_TMP/lintian.out")"
contents=$(dpkg-deb -c "$deb")
grep -q ' ./usr/lib/systemd/system/ghostvram-serve.service$' <<<"$contents" || fail "unit in the package"
grep -q ' ./usr/share/man/man1/ghostvram.1.gz$' <<<"$contents" || fail "man page in the package"
grep -q ' ./usr/share/locale/zh_CN/LC_MESSAGES/ghostvram.mo$' <<<"$contents" || fail "Chinese catalogue in the package"
grep -q ' ./usr/lib/ghostvram/sim/current/libnvidia-ml.so.1$' <<<"$contents" || fail "simulated driver in the package"
grep -q ' ./usr/share/doc/ghostvram/faq.md.gz$' <<<"$contents" || fail "the FAQ in the package"
grep -q ' ./usr/share/doc/ghostvram/zh-CN/faq.md.gz$' <<<"$contents" || fail "the Chinese FAQ in the package (compressed)"
grep -q ' ./usr/share/doc/ghostvram/README.zh-CN.md$' <<<"$contents" || fail "the Chinese README in the package"
# the Slurm and NHC files of docs/fleet.md, where the RPM has them too (t_rpm); the scripts executable
grep -q '^-rwxr-xr-x .* ./usr/share/ghostvram/deploy/slurm/epilog.sh$' <<<"$contents" || fail "the Slurm epilog in the package"
grep -q ' ./usr/share/ghostvram/deploy/nhc/ghostvram.nhc$' <<<"$contents" || fail "the NHC check in the package"
X=$GV_TMP/x
dpkg-deb -x "$deb" "$X"
assert_eq "$("$X/usr/bin/ghostvram" --version)" "ghostvram $version" "the packaged --version"
grep -q '^ExecStart=/usr/bin/ghostvram serve' "$X/usr/lib/systemd/system/ghostvram-serve.service" || fail "packaged unit path"
timeout 120 "$X/usr/bin/ghostvram" demo >"$GV_TMP/demo2.out" 2>&1 || fail "demo from the package: $(tail -5 "$GV_TMP/demo2.out")"
grep -q '^Demo over' "$GV_TMP/demo2.out" || fail "packaged demo did not finish"
for f in control rules changelog copyright source/format; do [ -s "$GV_SRC/debian/$f" ] || fail "debian/$f"; done
[ -x "$GV_SRC/debian/rules" ] || fail "debian/rules is not executable"
assert_eq "$(dpkg-parsechangelog -l "$GV_SRC/debian/changelog" -S Version)" "$version" "debian/changelog version"

note "the container recipe as text (t_image builds and runs it)"
DF=$GV_SRC/packaging/Dockerfile
assert_eq "$(grep -c '^ARG BASE=debian:bookworm-slim$' "$DF")" 1 "the base is Debian 12 by default"
assert_eq "$(grep -c '^FROM ${BASE}' "$DF")" 2 "both stages on the base"
image=$(sed -n 's/^ *image: *//p' "$GV_SRC/deploy/kubernetes/ghostvram-daemonset.yaml")
assert_eq "$image" "ghostvram:$version" "the manifest's image"
grep -q "docker build -f packaging/Dockerfile -t $image \." "$DF" || fail "the recipe's build line names $image"
grep -q "org.opencontainers.image.version=\"$version\"" "$DF" || fail "image label version"
# the build stage's whole RUN (its package list goes on over continued lines), and build_pkgs
# as the script has it (over lines too)
build_line=$(sed -n '/AS build/,/^FROM/p' "$DF")
build_pkgs=$(sed -n '/^build_pkgs=(/,/)/p' "$GV_SRC/scripts/install-deps" | sed 's/^build_pkgs=(//; s/)$//')
[ "$(wc -w <<<"$build_pkgs")" -ge 10 ] || fail "build_pkgs of scripts/install-deps not read: $build_pkgs"
for p in $build_pkgs; do
        [ "$p" = libcmocka-dev ] && continue # tests only: GV_TESTS=OFF
        grep -qw -- "$p" <<<"$build_line" || fail "the build stage lacks $p (scripts/install-deps)"
done
run_line=$(sed -n '/^FROM ${BASE}$/,$p' "$DF" | grep 'apt-get install')
ma=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
# (a sanitizer build links its runtimes too: not what the recipe's plain build needs)
for so in $(objdump -p "$GV_BIN" | awk '/NEEDED/ {print $2}' | grep -vE '^lib(asan|ubsan|tsan|lsan)\.'); do
        pkg=$(dpkg -S "*/$ma/$so" 2>/dev/null | head -1 | cut -d: -f1)
        [ -n "$pkg" ] || fail "no package owns $so"
        case $pkg in libc6 | libtinfo6) continue ;; esac # in every Debian image (essential, or needed by bash)
        grep -qw -- "$pkg" <<<"$run_line" || fail "the run stage lacks $pkg (for $so)"
done
grep -q '^ENTRYPOINT \["/usr/bin/ghostvram"\]' "$DF" || fail "ENTRYPOINT"
grep -q '^COPY --from=build /stage/usr/bin/ghostvram /usr/bin/ghostvram' "$DF" || fail "the binary is copied where ENTRYPOINT runs it"
grep -q '^build' "$GV_SRC/.dockerignore" || fail ".dockerignore keeps build trees out of the context"
echo PASS
