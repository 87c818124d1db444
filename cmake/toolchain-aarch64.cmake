# Cross build for aarch64 (GH200/GB200 nodes) from an x86-64 Debian host: `make arm64`
# (docs/arm64.md). Needs `scripts/install-deps --arm64`: the cross gcc, the arm64 -dev packages
# (multiarch) and qemu-user-static, under which ctest runs what it built
# (CMAKE_CROSSCOMPILING_EMULATOR; the integration scripts reach the arm64 binaries through
# binfmt_misc instead, see scripts/arm64-binfmt).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(GV_CROSS_TRIPLE aarch64-linux-gnu)
set(CMAKE_C_COMPILER ${GV_CROSS_TRIPLE}-gcc)
set(CMAKE_AR ${GV_CROSS_TRIPLE}-ar CACHE FILEPATH "")
set(CMAKE_RANLIB ${GV_CROSS_TRIPLE}-ranlib CACHE FILEPATH "")
set(CMAKE_STRIP ${GV_CROSS_TRIPLE}-strip CACHE FILEPATH "")

# Debian's multiarch layout: the arm64 libraries and headers live beside the host's, under
# the triple; the sysroot of the cross gcc is /usr/aarch64-linux-gnu
set(CMAKE_FIND_ROOT_PATH /usr/${GV_CROSS_TRIPLE} /usr/lib/${GV_CROSS_TRIPLE})
set(CMAKE_LIBRARY_ARCHITECTURE ${GV_CROSS_TRIPLE})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)    # the host's tools (msgfmt, bpftool, clang)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)

# pkg-config reads only the arm64 .pc files (and the architecture-independent ones), never the
# host's: a library missing for arm64 fails the configure instead of linking the x86 one
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/${GV_CROSS_TRIPLE}/pkgconfig:/usr/share/pkgconfig)
set(ENV{PKG_CONFIG_PATH} "")
set(ENV{PKG_CONFIG_SYSROOT_DIR} "")

# ctest runs the unit tests and fuzz replays through it. No -L /usr/aarch64-linux-gnu: the arm64
# libc6 is installed multiarch (/lib/ld-linux-aarch64.so.1, /lib/aarch64-linux-gnu), found on
# the real root as binfmt's qemu finds it; with -L, qemu 7.2 hung six unit tests here in their
# fork/exec tests (test_util's test_deadline, 120 s timeouts), which pass in 1 s without it
find_program(GV_QEMU_AARCH64 qemu-aarch64-static)
if(GV_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${GV_QEMU_AARCH64})
endif()
