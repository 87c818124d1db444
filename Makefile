# Thin wrapper around CMake. `make run` and `make test` install missing Debian packages first.
BUILD      ?= build
BUILD_ASAN ?= build-asan
BUILD_ARM64 ?= build-arm64
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_ARGS ?=
ifeq ($(CI),true)
CMAKE_ARGS += -DGV_WERROR=ON
endif

PREFIX     ?= /usr/local
DESTDIR    ?=

# The message catalogues: po/LANG.po brought up to the sentences marked in src/ (then translate
# what is new: t_i18n fails until every one is; docs/i18n.md).
po-update: build
	scripts/i18n-pot $(BUILD)/ghostvram.pot
	for l in $$(grep -v '^#' po/LINGUAS); do msgmerge --quiet --update --backup=none --no-fuzzy-matching po/$$l.po $(BUILD)/ghostvram.pot; done

.PHONY: po-update all deps test-deps oracle-deps build build-asan run test test-unit test-asan test-valgrind fuzz bench clean install deb rpm arm64 arm64-deps test-arm64

all: build

deps:
	@scripts/install-deps

test-deps:
	@scripts/install-deps --test

# NVIDIA's real userspace from Debian (cached), the judge of the simulated driver in the
# oracle tests; a failure to fetch it fails the test run.
oracle-deps:
	@scripts/fetch-nvidia-userspace >/dev/null

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_ARGS) >/dev/null
	cmake --build $(BUILD) -j $(JOBS) -- --no-print-directory

build-asan: deps
	cmake -S . -B $(BUILD_ASAN) -DCMAKE_BUILD_TYPE=Debug -DGV_SANITIZE=ON $(CMAKE_ARGS) >/dev/null
	cmake --build $(BUILD_ASAN) -j $(JOBS) -- --no-print-directory

# The main job on this host; on a host without an NVIDIA driver, the same on a simulated one.
run: build
	@scripts/run-main $(BUILD)

# The whole suite: unit, integration (also inside a new PID namespace), the oracle tests
# against NVIDIA's own userspace, fuzz corpora,
# then the same under ASan+UBSan, then the unit tests under valgrind.
test: test-deps oracle-deps build build-asan
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)
	cd $(BUILD_ASAN) && ASAN_OPTIONS=halt_on_error=1:detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		ctest --output-on-failure -j $(JOBS) -LE no-asan
	scripts/valgrind-unit $(BUILD)

# The binary, the simulated driver demo needs, the man page, completions, systemd units (their
# ExecStart under PREFIX) and deploy examples: `make install PREFIX=/usr DESTDIR=/tmp/stage`.
install: build
	DESTDIR="$(DESTDIR)" cmake --install $(BUILD) --prefix "$(PREFIX)"

# A Debian package of this tree's build (scripts/build-deb; debian/ also builds with
# dpkg-buildpackage -us -uc -b).
deb: build
	scripts/build-deb $(BUILD) .

# The RPM (RHEL 9 / Rocky 9 / Alma 9), built from scratch by rpmbuild -ba from a tarball of the
# tree: packaging/rpm/ghostvram.spec, under $(BUILD)/rpm (scripts/build-rpm). Then, on the
# RHEL host: sudo dnf install ./ghostvram-VERSION-1.el9.x86_64.rpm
rpm: deps
	@rpm=$$(scripts/build-rpm $(BUILD)/rpm) && echo "RPM: $$rpm (rpmbuild's log: $(BUILD)/rpm/rpmbuild.log)" && \
		echo "On a RHEL / Rocky / Alma 9 host: sudo dnf install $$rpm"

# aarch64 (GH200/GB200 nodes), cross-built on this x86-64 Debian host into $(BUILD_ARM64):
# ghostvram, the simulated driver (sim/), the track preload, the tests (docs/arm64.md).
arm64-deps:
	@scripts/install-deps --arm64

arm64: arm64-deps
	cmake -S . -B $(BUILD_ARM64) -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-aarch64.cmake \
		-DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_ARGS) >/dev/null
	cmake --build $(BUILD_ARM64) -j $(JOBS) -- --no-print-directory

# Under qemu-user: the unit tests, the fuzz corpora, and the integration tests of
# tests/arm64-subset.txt (ctest label arm64). Separate from `make test` and CI (its time).
test-arm64: arm64
	scripts/arm64-binfmt
	cd $(BUILD_ARM64) && ctest --output-on-failure -j $(JOBS) -L arm64

fuzz:
	scripts/fuzz-run $(BUILD)-fuzz 30

bench: build
	bench/run-all $(BUILD)
	bench/track/run $(BUILD)

clean:
	rm -rf $(BUILD) $(BUILD_ASAN) $(BUILD)-fuzz $(BUILD_ARM64)
