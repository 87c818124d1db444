#!/usr/bin/env bash
# Packaging for RPM-based clusters (RHEL 9 / Rocky 9 / Alma 9): scripts/build-rpm (what `make rpm`
# runs) builds packaging/rpm/ghostvram.spec from scratch with rpmbuild -ba, from a tarball of the
# tree; the RPM holds exactly what `cmake --install --prefix /usr` installs (the Slurm and NHC
# files included), claims none of NVIDIA's libraries, installs with rpm into a scratch root, and
# the installed ghostvram runs the demo on the installed simulated driver; rpmlint reports no
# error and no warning but the accepted ones, each explained below.
. "$(dirname "$0")/lib.sh"
: "${GV_SRC:?GV_SRC must name the source tree}"
need_tool rpmbuild rpm
need_tool rpmlint rpmlint
need_tool jq jq
# rpm -i chowns every file to root: as another user, under fakeroot
as_root=()
if [ "$(id -u)" -ne 0 ]; then need_tool fakeroot fakeroot; as_root=(fakeroot); fi
version=$("$GV_BIN" --version | awk '{print $2}')
assert_eq "$version" "$(sed -n 's/^project(ghostvram VERSION \([0-9.]*\).*/\1/p' "$GV_SRC/CMakeLists.txt")" "the binary's version"
assert_eq "$(sed -n 's/^Version: *//p' "$GV_SRC/packaging/rpm/ghostvram.spec")" "$version" "the spec's Version"

note "make rpm: the recipe; scripts/build-rpm into a scratch topdir (rpmbuild -ba, from scratch)"
grep -q '^rpm: ' "$GV_SRC/Makefile" || fail "no rpm target in the Makefile"
grep -q 'scripts/build-rpm $(BUILD)/rpm' "$GV_SRC/Makefile" || fail "make rpm does not build under \$(BUILD)/rpm"
top=$GV_TMP/top
rpm=$("$GV_SRC/scripts/build-rpm" "$top" 2>"$GV_TMP/build.err") || fail "build-rpm: $(tail -30 "$GV_TMP/build.err")"
case $rpm in
"$top"/RPMS/*/ghostvram-"$version"-1*.rpm) ;;
*) fail "the RPM's path: $rpm" ;;
esac
[ -s "$rpm" ] || fail "no RPM at $rpm"
ls "$top"/SRPMS/ghostvram-"$version"-1*.src.rpm >/dev/null || fail "no source RPM (rpmbuild -ba)"
tar -tzf "$top/SOURCES/ghostvram-$version.tar.gz" >"$GV_TMP/tar.list"
for f in CMakeLists.txt packaging/rpm/ghostvram.spec deploy/slurm/epilog.sh po/zh_CN.po; do
        grep -qx "ghostvram-$version/$f" "$GV_TMP/tar.list" || fail "the tarball lacks $f"
done
grep -q "^ghostvram-$version/build" "$GV_TMP/tar.list" && fail "the tarball holds a build tree"
# here (Debian) rpm's database knows no packages: the BuildRequires are unchecked, and it says so
if ! rpm -qf /bin/sh >/dev/null 2>&1; then
        grep -q 'rpmbuild --nodeps, the BuildRequires are not checked' "$GV_TMP/build.err" || fail "build-rpm did not say --nodeps"
fi
assert_eq "$(rpm -qp --qf '%{NAME} %{VERSION}' "$rpm")" "ghostvram $version" "the RPM's name and version"
echo "RPM: $(basename "$rpm"), $(stat -c %s "$rpm") bytes"

note "the RPM's files are what cmake --install --prefix /usr installs"
# files only (the directories follow from them), without the build-id links rpmbuild adds; the
# RPM's two documented differences from make install mapped: the man page gzipped
# (brp-compress) and the zsh completion where RHEL's zsh looks (the spec's GV_ZSH_COMPLETION_DIR)
rpm -qp --qf '[%{FILEMODES:perms} %{FILENAMES}\n]' "$rpm" >"$GV_TMP/rpm.modes"
grep -v '^d' "$GV_TMP/rpm.modes" | cut -d' ' -f2- | grep -v '^/usr/lib/\.build-id/' | sort >"$GV_TMP/rpm.files"
D=$GV_TMP/dest
DESTDIR=$D cmake --install "$GV_BUILD" --prefix /usr >/dev/null
(cd "$D" && find . ! -type d | sed 's,^\.,,') |
        sed -e 's,^/usr/share/man/man1/ghostvram\.1$,&.gz,' \
            -e 's,^/usr/share/zsh/vendor-completions/,/usr/share/zsh/site-functions/,' | sort >"$GV_TMP/install.files"
echo "files: $(wc -l <"$GV_TMP/rpm.files") in the RPM, $(wc -l <"$GV_TMP/install.files") from cmake --install"
if ! diff "$GV_TMP/install.files" "$GV_TMP/rpm.files" >"$GV_TMP/files.diff"; then
        fail "the RPM and cmake --install differ (< only installed, > only in the RPM): $(grep '^[<>]' "$GV_TMP/files.diff")"
fi
[ "$(wc -l <"$GV_TMP/rpm.files")" -ge 40 ] || fail "only $(wc -l <"$GV_TMP/rpm.files") files"
# the directories of its own, so that removing it leaves none behind
for d in /usr/lib/ghostvram /usr/lib/ghostvram/sim/current /usr/share/ghostvram/deploy/slurm /usr/share/doc/ghostvram/zh-CN; do
        grep -qx "d[rwx-]* $d" "$GV_TMP/rpm.modes" || fail "the RPM does not own $d"
done
for f in /usr/bin/ghostvram /usr/lib/ghostvram/sim/gv-simcuda /usr/lib/ghostvram/sim/gv-simteardown \
         /usr/share/ghostvram/deploy/slurm/epilog.sh /usr/share/ghostvram/deploy/slurm/prolog.sh \
         /usr/share/ghostvram/deploy/slurm/healthcheck.sh; do
        grep -qx -- "-rwx[r-][w-]x[r-][w-]x $f" "$GV_TMP/rpm.modes" || fail "$f is not executable in the RPM: $(grep " $f$" "$GV_TMP/rpm.modes")"
done

note "what it provides and requires: nothing of NVIDIA's"
provides=$(rpm -qp --provides "$rpm")
assert_eq "$(grep -vE '^ghostvram(\(x86-64\)|\(aarch64\))? = ' <<<"$provides" || true)" "" "the RPM provides only itself"
requires=$(rpm -qp --requires "$rpm")
for so in libjansson.so.4 libmicrohttpd.so.12 libncursesw.so.6; do
        grep -q "^$so()" <<<"$requires" || fail "no Requires on $so: $requires"
done
grep -E 'libnvidia-ml|libcuda|libghostvram-track' <<<"$requires" && fail "the RPM requires a private library of its own"
# Debian's brp-elfperms takes the x bit off shared libraries before rpm generates dependencies
# (only executable ELF files get any), so the RPM built here could not show the spec's filters
# missing: elfdeps on each ELF file says what it would provide and require on RHEL, where they keep
# their mode, and every such private name must lie on a path the spec excludes
spec_re() { rpm --eval "$(sed -n "s/^%global $1 //p" "$GV_SRC/packaging/rpm/ghostvram.spec")"; }
prov_re=$(spec_re __provides_exclude_from) req_re=$(spec_re __requires_exclude_from)
[ -n "$prov_re" ] && [ -n "$req_re" ] || fail "the spec's dependency filters: '$prov_re' '$req_re'"
private=0
while IFS= read -r f; do
        case $(file -b "$D$f" 2>/dev/null) in ELF*) ;; *) continue ;; esac
        deps=$( { /usr/lib/rpm/elfdeps --provides <<<"$D$f"; /usr/lib/rpm/elfdeps --requires <<<"$D$f"; } |
                grep -E '^lib(nvidia-ml|cuda|ghostvram-track)\.so' || true)
        [ -n "$deps" ] || continue
        private=$((private + 1))
        grep -qE "$prov_re" <<<"$f" && grep -qE "$req_re" <<<"$f" || fail "$f would provide or require $deps on RHEL (the spec's filters miss it)"
done <"$GV_TMP/rpm.files"
[ "$private" -ge 7 ] || fail "only $private files with private libraries' names"
grep -qx '/usr/bin/bash' <<<"$requires" || fail "the Slurm scripts' interpreter is not required by path"
grep -qx '/usr/bin/env' <<<"$requires" && fail "a script still runs through /usr/bin/env"

note "rpm -i into a scratch root, then the installed ghostvram"
S=$GV_TMP/root
"${as_root[@]}" rpm --root "$S" --dbpath /var/lib/rpm --initdb
[ -n "$(ls "$S/var/lib/rpm")" ] || fail "no rpm database in the scratch root"
"${as_root[@]}" rpm --root "$S" --dbpath /var/lib/rpm --nodeps --noscripts -i "$rpm" 2>"$GV_TMP/install.err" ||
        fail "rpm -i: $(cat "$GV_TMP/install.err")"
assert_eq "$(rpm --root "$S" --dbpath /var/lib/rpm -q --qf '%{NAME}-%{VERSION}' ghostvram)" "ghostvram-$version" "installed, by the scratch database"
verify=$("${as_root[@]}" rpm --root "$S" --dbpath /var/lib/rpm -V --nodeps ghostvram 2>&1) || fail "rpm -V: $verify"
assert_eq "$(find "$S/usr" ! -type d | wc -l)" "$(grep -vc '^d' "$GV_TMP/rpm.modes")" "files (and build-id links) in the scratch root"
X=$S/usr/bin/ghostvram
assert_eq "$("$X" --version)" "ghostvram $version" "the installed --version"
"$X" sim init "$GV_TMP/s" >/dev/null
lib=$(GHOSTVRAM_SIM=$GV_TMP/s "$X" snapshot --json | jq -r .driver.library)
assert_eq "$lib" "$S/usr/bin/../lib/ghostvram/sim/current/libnvidia-ml.so.1" "the library the installed ghostvram loads"
timeout 120 "$X" demo >"$GV_TMP/demo.out" 2>&1 || fail "demo from the RPM: $(tail -5 "$GV_TMP/demo.out")"
grep -q '^Demo over' "$GV_TMP/demo.out" || fail "the RPM's demo did not finish: $(tail -3 "$GV_TMP/demo.out")"
zh=$(GHOSTVRAM_LOCALEDIR=$S/usr/share/locale env -u LC_ALL -u LC_MESSAGES -u LANG LANGUAGE=zh_CN "$X" --help | head -n 1)
assert_eq "$zh" "用法：ghostvram 命令 [选项]" "the RPM's zh_CN catalogue"
grep -q '^ExecStart=/usr/bin/ghostvram serve' "$S/usr/lib/systemd/system/ghostvram-serve.service" || fail "the unit's ExecStart"
for f in epilog.sh prolog.sh healthcheck.sh; do
        assert_eq "$(head -1 "$S/usr/share/ghostvram/deploy/slurm/$f")" "#!/usr/bin/bash" "$f's interpreter"
        bash -n "$S/usr/share/ghostvram/deploy/slurm/$f" || fail "$f does not parse"
done
# the scripts find their library next to themselves, and the NHC check is there
[ -s "$S/usr/share/ghostvram/deploy/slurm/ghostvram-slurm-lib.sh" ] || fail "the Slurm library"
grep -q '^function check_ghostvram()' "$S/usr/share/ghostvram/deploy/nhc/ghostvram.nhc" || fail "the NHC check"

note "rpmlint: the RPM and the spec"
# (-c: RHEL's man page compression, gz, where Debian's rpmlint defaults to openSUSE's bz2)
lint() { # FILE...: rpmlint's output for them, in $GV_TMP/lint.out; fails when it checked nothing
        rpmlint -c "$GV_SRC/packaging/rpm/rpmlint.toml" "$@" >"$GV_TMP/lint.out" 2>&1 || true
        summary=$(grep -E '^ *[0-9]+ packages and [0-9]+ specfiles checked' "$GV_TMP/lint.out") ||
                fail "rpmlint did not check $*: $(tail -5 "$GV_TMP/lint.out")"
        echo "rpmlint $(basename "$1"): $summary"
}
# lint_judge ACCEPTED-ERRORS ACCEPTED-WARNINGS (regexps of tags): fails on any other error or warning
lint_judge() {
        errors=$(grep -E '^[^ ]*: E: ' "$GV_TMP/lint.out" | grep -vE ": E: ($1)( |$)" || true)
        [ -z "$errors" ] || fail "rpmlint errors: $errors"
        warnings=$(grep -E '^[^ ]*: [EW]: ' "$GV_TMP/lint.out" || true)
        [ -n "$warnings" ] && echo "accepted:" && sed 's/^/  /' <<<"$warnings"
        unaccepted=$(grep ': W: ' <<<"$warnings" | grep -vE ": W: ($2)( |$)" || true)
        [ -z "$unaccepted" ] || fail "rpmlint warnings not accepted: $unaccepted"
}
# The RPM. Accepted errors:
#  no-signature: an RPM is signed (rpmsign) by the repository that publishes it, not by its build
#  no-packager-tag, no-group-tag: openSUSE's rules, Debian's rpmlint's defaults; Fedora's and
#   RHEL's packaging guidelines say to leave both out of a spec (the build system sets Packager;
#   Group is obsolete)
# Accepted warnings:
#  no-url-tag: the project has no public home yet
#  invalid-license: it has not chosen a licence yet (debian/copyright); the tag says exactly that
#  unstripped-binary-or-object: Debian's rpm makes no -debuginfo package and its brp-strip removes
#   only the debugging sections (strip -g), leaving the symbol table; on RHEL find-debuginfo strips
#   the ELF files and moves what it removes into ghostvram-debuginfo
#  no-manual-page-for-binary: rpmlint 2.4.0 (Debian 12) records each man page's section ("1")
#   instead of its name (FilesCheck.py, man_basenames), so it says this of every binary; the page
#   is in the RPM (/usr/share/man/man1/ghostvram.1.gz: the file list above)
lint "$rpm"
grep -qx '/usr/share/man/man1/ghostvram.1.gz' "$GV_TMP/rpm.files" || fail "no man page in the RPM"
lint_judge 'no-signature|no-packager-tag|no-group-tag' \
        'no-url-tag|invalid-license|unstripped-binary-or-object|no-manual-page-for-binary'
# The spec. Accepted errors:
#  hardcoded-library-path: %{_prefix}/lib/ghostvram, not %{_libdir} (lib64): the binary finds the
#   simulated driver at bin/../lib/ghostvram/sim, relative to itself
# Accepted warnings:
#  invalid-url: Source0 is a bare file name, the tarball build-rpm makes (no public home to name)
#  no-buildroot-tag: rpm ignores BuildRoot since 4.6; Fedora's and RHEL's guidelines say leave it out
lint "$GV_SRC/packaging/rpm/ghostvram.spec"
lint_judge 'hardcoded-library-path' 'invalid-url|no-buildroot-tag'
echo PASS
