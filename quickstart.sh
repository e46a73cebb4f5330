#!/bin/sh
# Quick start for a fresh Debian 12 machine (run as root, or with sudo).
#   ./quickstart.sh demo   install what is missing, build, run the demo
#   ./quickstart.sh test   install what is missing, build, run every test
# Builds in ./build (and, for test: ./build-minimal, the configuration
# without optional backends, with ASan+UBSan; ./build-fuzz, libFuzzer targets
# built by clang). CI runs `./quickstart.sh test` (see .ci/run).
set -eu
cd "$(dirname "$0")"
mode=${1:-}
case "$mode" in
demo|test) ;;
*) echo "usage: $0 demo|test" >&2; exit 2 ;;
esac
jobs=$(nproc 2>/dev/null || echo 2)

packages="gcc make autoconf automake libtool pkg-config libpmix-dev libfabric-dev libfabric-bin
libibverbs-dev libucx-dev ucx-utils check openmpi-bin libopenmpi-dev mpich libmpich-dev gnuplot-nox
clang libclang-rt-14-dev clang-format valgrind slurmctld slurmd slurm-client munge python3"

install_missing() {
    missing=""
    for p in $packages; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
    done
    [ -z "$missing" ] && return 0
    if [ "$(id -u)" != 0 ]; then
        echo "quickstart: missing Debian packages:$missing" >&2
        echo "quickstart: run as root, or: sudo apt-get install$missing" >&2
        exit 1
    fi
    echo "quickstart: installing$missing"
    apt-get update -q >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $missing >/dev/null
}

# configure_in DIR [configure args...]: (re)configures when needed.
configure_in() {
    dir=$1; shift
    if [ ! -x configure ] || [ configure.ac -nt configure ]; then
        ./autogen.sh
    fi
    mkdir -p "$dir"
    if [ ! -f "$dir/Makefile" ] || [ configure -nt "$dir/Makefile" ] ||
       [ "$(cat "$dir/.quickstart-args" 2>/dev/null)" != "$*" ]; then
        (cd "$dir" && ../configure -q "$@") && echo "$*" > "$dir/.quickstart-args"
    fi
}

# Sums every Check log of a build into "N passed, N failed".
summarize_checks() {
    awk '/Checks: [0-9]+, Failures: [0-9]+, Errors: [0-9]+/ {
             gsub(",", ""); for (i = 1; i <= NF; i++) {
                 if ($i == "Checks:") c += $(i+1); if ($i == "Failures:") f += $(i+1); if ($i == "Errors:") f += $(i+1) } }
         END { printf "%d %d\n", c - f, f }' "$@" /dev/null
}

leftovers() {
    # Killed jobs may take a moment to be reaped: look again for up to 2 s.
    for _ in 1 2 3 4 5 6 7 8 9 10; do leftovers_once 2>/dev/null && return 0; sleep 0.2; done
    leftovers_once
}

leftovers_once() {
    status=0
    shm=$(ls /dev/shm 2>/dev/null | grep '^rmb' || true)
    if [ -n "$shm" ]; then echo "quickstart: left in /dev/shm: $shm" >&2; status=1; fi
    tmp=$(ls -d /tmp/oshrun.* 2>/dev/null || true)
    if [ -n "$tmp" ]; then echo "quickstart: left in /tmp: $tmp" >&2; status=1; fi
    procs=$(ps -eo stat=,comm= | awk '$1 !~ /^Z/ && $2 ~ /^(oshrun|mp_|check_)/ {print $2}')
    if [ -n "$procs" ]; then echo "quickstart: processes left running: $procs" >&2; status=1; fi
    return $status
}

install_missing

if [ "$mode" = demo ]; then
    configure_in build
    make -C build -j"$jobs" >/dev/null
    echo "quickstart: oshrun -n 4 examples/shmem/ring   (OpenSHMEM: put, atomic, reduction)"
    build/oshrun/oshrun -n 4 build/examples/shmem/ring
    exit $?
fi

failed=0
configure_in build --enable-werror
make -C build -j"$jobs" >/dev/null
make -C build -j"$jobs" check || failed=1
# The configuration without any optional backend must keep building and
# passing; it runs under ASan+UBSan (docs/hardening.md).
configure_in build-minimal --enable-werror --enable-sanitizers --without-ofi --without-verbs --without-mpi
make -C build-minimal -j"$jobs" >/dev/null
make -C build-minimal -j"$jobs" check || failed=1
# A short libFuzzer run of each target (make fuzz FUZZ_SECONDS=600 for a long one).
configure_in build-fuzz CC=clang --enable-fuzzing --without-ofi --without-verbs --without-mpi
make -C build-fuzz -j"$jobs" fuzz FUZZ_SECONDS=20 || failed=1
if [ $failed != 0 ]; then
    for log in build/test-suite.log build-minimal/test-suite.log; do
        [ -f "$log" ] && grep -q FAIL "$log" && cat "$log"
    done
fi
leftovers || failed=1
set -- $(summarize_checks $(find build/tests build-minimal/tests -name '*.log' 2>/dev/null))
echo "quickstart: Check totals over both builds:"
echo "$1 passed, $2 failed"
[ "$2" = 0 ] && [ $failed = 0 ]
