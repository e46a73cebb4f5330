#!/bin/bash
# tests-sos.sh: build the OpenSHMEM test suite openshmem-org/tests-sos against an
# installed rmb and run its C tests (test/unit, test/spec-example, test/apps).
#
#   scripts/tests-sos.sh PREFIX [SOS_SRC_DIR]
#
# PREFIX       rmb install prefix (PREFIX/bin/oshcc and PREFIX/bin/oshrun).
# SOS_SRC_DIR  a tests-sos work tree or git directory (default: $SOS_GIT if set,
#              else a clone of https://github.com/openshmem-org/tests-sos).
#
# Environment (all optional):
#   BUILD_DIR=/tmp/tests-sos-build  everything is written here (never in this repo)
#   TESTS="hello unit/barrier ..."  run only these tests (NAME or DIR/NAME);
#                                   only these are (re)built too
#   NPES="2 4"                      PE counts
#   BTLS="shm ofi"                  backends (RMB_BTL=shm / RMB_BTL=ofi; auto: the
#                                   library's choice, shm on-node and ofi across nodes)
#   NODES=1                         emulated nodes per job (oshrun --nodes; with 2 or
#                                   more, use BTLS=auto)
#   TIMEOUT=60                      per-run limit in seconds (oshrun --timeout)
#   JOBS=2                          parallel compiles
#   NO_BUILD=1                      run what is built, do not build
#   FRESH=1                         discard the previous build and sources
#   RMB_OFI_PROVIDER=...            passed through for the ofi runs (see docs/btl_ofi.md)
#   PRIVATE_SHM_OFF=1               do not give each job a private /dev/shm (see below)
#
# Output: a table (test, build, one column per BTL x NPES: PASS, FAIL(rc),
# TIMEOUT, NOBUILD) and totals on stdout; also
# BUILD_DIR/results.tsv, BUILD_DIR/results.md, BUILD_DIR/nobuild.txt (the
# missing symbols of each test that did not build) and per-test logs under
# BUILD_DIR/logs/{build,run}/. The exit status is 0 when every run passed.
#
# The tests are configured as for tests-sos' "make check", minus C++, Fortran,
# shmemx (SOS extensions) and performance tests; the profiling tests
# (rma_coverage_pshmem, pcontrol) are in. Each runs the way its Makefiles run
# it: "oshrun -np N [--nodes K] ./test", no arguments.
set -u

usage() {
    sed -n '2,35p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
}

if [ $# -lt 1 ] || [ $# -gt 2 ]; then usage; fi
case "$1" in -h | --help) usage ;; esac

PREFIX=$(cd "$1" 2>/dev/null && pwd) || { echo "tests-sos: no such prefix: $1" >&2; exit 2; }
SRC_ARG=${2:-${SOS_GIT:-}}
BUILD_DIR=${BUILD_DIR:-/tmp/tests-sos-build}
NPES=${NPES:-2 4}
BTLS=${BTLS:-shm ofi}
TIMEOUT=${TIMEOUT:-60}
JOBS=${JOBS:-2}
TESTS_FILTER=${TESTS:-}
SOS_DIRS="unit spec-example apps"
SOS_URL=https://github.com/openshmem-org/tests-sos
NODES=${NODES:-1}
case "$NODES" in ''|*[!0-9]*|0) echo "tests-sos: NODES must be a positive integer" >&2; exit 2 ;; esac
NODE_ARGS=""
[ "$NODES" -gt 1 ] && NODE_ARGS="--nodes $NODES"

OSHCC=$PREFIX/bin/oshcc
OSHRUN=$PREFIX/bin/oshrun
for f in "$OSHCC" "$OSHRUN"; do
    [ -x "$f" ] || { echo "tests-sos: $f not found or not executable" >&2; exit 2; }
done

# Never write inside the repository this script lives in.
REPO=$(cd "$(dirname "$0")/.." && pwd -P)
BUILD_DIR=$(realpath -m "$BUILD_DIR")
case "$BUILD_DIR/" in
"$REPO"/*) echo "tests-sos: BUILD_DIR ($BUILD_DIR) is inside $REPO; choose another" >&2; exit 2 ;;
esac
mkdir -p "$BUILD_DIR" || exit 1

SRC=$BUILD_DIR/src      # private copy of tests-sos (autogen writes into it)
OBJ=$BUILD_DIR/obj      # its configure/make build tree
LOGS=$BUILD_DIR/logs
RUNTMP=$BUILD_DIR/tmp   # TMPDIR of the jobs, checked for leftovers
[ "${FRESH:-0}" = 1 ] && rm -rf "$SRC" "$OBJ" "$LOGS"
mkdir -p "$LOGS/build" "$LOGS/run" "$RUNTMP"

log() { echo "tests-sos: $*" >&2; }

# ---------------------------------------------------------------- cleanup
CUR_PGID=""
cleanup() {
    if [ -n "$CUR_PGID" ]; then
        kill -TERM -- "-$CUR_PGID" 2>/dev/null
        sleep 1
        kill -KILL -- "-$CUR_PGID" 2>/dev/null
        CUR_PGID=""
    fi
}
trap 'cleanup; exit 130' INT TERM HUP
trap cleanup EXIT

# Entries of /dev/shm that nobody has open or mapped (to remove the ones a
# test created and left behind, and nothing that another job still uses).
shm_in_use() {
    local f=$1 p fd
    for p in /proc/[0-9]*; do
        for fd in "$p"/fd/*; do
            [ "$(readlink "$fd" 2>/dev/null)" = "$f" ] && return 0
        done
        grep -qF -- "$f" "$p/maps" 2>/dev/null && return 0
    done
    return 1
}
shm_list() { ls -A /dev/shm 2>/dev/null | sort; }

# ---------------------------------------------------------------- sources
get_sources() {
    [ -f "$SRC/configure.ac" ] && return 0
    local from=$SRC_ARG
    rm -rf "$SRC" && mkdir -p "$SRC" || return 1
    if [ -z "$from" ]; then
        log "cloning $SOS_URL"
        git clone -q "$SOS_URL" "$SRC.git" || return 1
        from=$SRC.git
    fi
    if [ -f "$from/configure.ac" ]; then
        log "copying $from"
        (cd "$from" && tar -cf - --exclude=.git .) | tar -xf - -C "$SRC" || return 1
        git -C "$from" rev-parse HEAD >"$SRC/COMMIT" 2>/dev/null || echo unknown >"$SRC/COMMIT"
    else
        log "exporting HEAD of $from"
        git --git-dir="$from" archive HEAD | tar -xf - -C "$SRC" || return 1
        git --git-dir="$from" rev-parse HEAD >"$SRC/COMMIT" || return 1
    fi
    rm -rf "$SRC.git"
    log "autogen"
    (cd "$SRC" && ./autogen.sh) >"$LOGS/autogen.log" 2>&1 || { log "autogen failed: $LOGS/autogen.log"; return 1; }
}

CONF_ARGS="--disable-cxx --disable-fortran --disable-shmemx --enable-profiling --disable-deprecated-tests --disable-lengthy-tests"
configure_sos() {
    local stamp="prefix=$PREFIX $CONF_ARGS"
    if [ -f "$OBJ/Makefile" ] && [ "$(cat "$OBJ/.rmb-stamp" 2>/dev/null)" = "$stamp" ]; then
        return 0
    fi
    rm -rf "$OBJ" && mkdir -p "$OBJ" || return 1
    log "configure (CC=$OSHCC)"
    # shellcheck disable=SC2086
    (cd "$OBJ" && "$SRC/configure" CC="$OSHCC" CXX="$PREFIX/bin/oshc++" $CONF_ARGS) \
        >"$LOGS/configure.log" 2>&1 ||
        { log "configure failed: $LOGS/configure.log"; return 1; }
    echo "$stamp" >"$OBJ/.rmb-stamp"
}

# Print "DIR NAME" for every test the Makefiles run (their TESTS variable,
# conditionals resolved by configure), then keep the ones TESTS= selects.
PV_MK=$BUILD_DIR/print-vars.mk
printf 'rmb-print-tests:\n\t@echo $(TESTS)\nrmb-print-progs:\n\t@echo $(check_PROGRAMS)\n' >"$PV_MK"
list_tests() {
    local d t sel
    for d in $SOS_DIRS; do
        for t in $(make -s -C "$OBJ/test/$d" -f Makefile -f "$PV_MK" rmb-print-tests 2>/dev/null); do
            if [ -n "$TESTS_FILTER" ]; then
                for sel in $TESTS_FILTER; do
                    case "$sel" in "$t" | "$d/$t") echo "$d $t"; break ;; esac
                done
            else
                echo "$d $t"
            fi
        done
    done
}

build_one() { # DIR NAME: one make per test, so one failure stops nothing else
    mkdir -p "$LOGS/build/$1"
    # Relink every time (cheap), and never keep a binary whose rebuild failed.
    rm -f "$OBJ/test/$1/$2"
    make -C "$OBJ/test/$1" "$2" >"$LOGS/build/$1/$2.log" 2>&1 || rm -f "$OBJ/test/$1/$2"
}
export -f build_one
export OBJ LOGS

# The routines a test lacks, from its build log (and the argument types that
# no C11 generic interface accepted, as _Generic:TYPE).
missing_syms() {
    sed -n -e "s/.*undefined reference to \`\([A-Za-z0-9_]*\)'.*/\1/p" \
        -e "s/.*implicit declaration of function '\([A-Za-z0-9_]*\)'.*/\1/p" \
        -e "s/.*implicit declaration of function ‘\([A-Za-z0-9_]*\)’.*/\1/p" \
        -e "s/.*error: '\([A-Za-z0-9_]*\)' undeclared.*/\1/p" \
        -e "s/.*error: ‘\([A-Za-z0-9_]*\)’ undeclared.*/\1/p" \
        -e "s/.*error: unknown type name '\([A-Za-z0-9_]*\)'.*/\1/p" \
        -e "s/.*error: unknown type name ‘\([A-Za-z0-9_]*\)’.*/\1/p" \
        -e "s/.*‘_Generic’ selector of type ‘\([^’]*\)’.* is not compatible.*/_Generic:\1/p" \
        -e "s/.*'_Generic' selector of type '\([^']*\)'.* is not compatible.*/_Generic:\1/p" "$1" |
        tr -d ' ' | sort -u | tr '\n' ' ' | sed 's/ $//'
}

# ---------------------------------------------------------------- run
# run_one DIR NAME BTL NP -> sets R to PASS / FAIL(rc) / TIMEOUT
# (not in a $(...) subshell, so that the traps can kill the running job)
run_one() {
    local d=$1 t=$2 btl=$3 np=$4 rc log before after f start
    log=$LOGS/run/$d/$t.$btl.np$np.log
    start=$SECONDS
    mkdir -p "$LOGS/run/$d"
    [ "$PRIVATE_SHM" = 1 ] || before=$(shm_list)
    # timeout(1) puts itself (and so oshrun and the PEs) in a process group
    # of its own: the group is killed afterwards whatever happened.
    (
        cd "$OBJ/test/$d" || exit 1
        unset RMB_BTL
        if [ "$btl" != auto ]; then export RMB_BTL=$btl; fi
        export TMPDIR=$RUNTMP
        echo "+ RMB_BTL=${RMB_BTL:-} oshrun -np $np $NODE_ARGS --timeout $TIMEOUT ./$t"
        # shellcheck disable=SC2086
        if [ "$PRIVATE_SHM" = 1 ]; then
            exec timeout -k 10 $((TIMEOUT + 30)) unshare -m sh -c "$PRIVATE_SHM_SH" sh \
                "$OSHRUN" -np "$np" $NODE_ARGS --timeout "$TIMEOUT" "./$t" </dev/null
        fi
        # shellcheck disable=SC2086
        exec timeout -k 10 $((TIMEOUT + 30)) "$OSHRUN" -np "$np" $NODE_ARGS --timeout "$TIMEOUT" "./$t" </dev/null
    ) >"$log" 2>&1 &
    CUR_PGID=$!
    wait "$CUR_PGID"
    rc=$?
    kill -KILL -- "-$CUR_PGID" 2>/dev/null
    CUR_PGID=""
    echo "+ exit status $rc after $((SECONDS - start)) s" >>"$log"
    if [ "$PRIVATE_SHM" = 1 ]; then
        sed -n "s|^+ left in /dev/shm: \(.*\)|$d/$t $btl np$np /dev/shm/\1 (private, discarded)|p" \
            "$log" >>"$BUILD_DIR/leftovers.txt"
    else
        after=$(shm_list)
        if [ "$after" != "$before" ]; then
            for f in $(comm -13 <(echo "$before") <(echo "$after")); do
                shm_in_use "/dev/shm/$f" && continue
                echo "+ left /dev/shm/$f (removed)" >>"$log"
                echo "$d/$t $btl np$np /dev/shm/$f (removed)" >>"$BUILD_DIR/leftovers.txt"
                rm -rf "/dev/shm/$f"
            done
        fi
    fi
    case $rc in
    0) R=PASS ;;
    124 | 137) R=TIMEOUT ;;
    *) R="FAIL($rc)" ;;
    esac
}

# As root, every job gets a private, empty /dev/shm (a tmpfs in its own mount
# namespace): what a test leaves there is reported, then vanishes with the
# namespace, and no other user's segment is ever touched. Otherwise, entries
# that appear in /dev/shm during a run and that no process has open or mapped
# are reported and removed.
PRIVATE_SHM_SH='mount -t tmpfs -o mode=1777 rmb-tests-sos /dev/shm || exit 125
"$@"; rc=$?
for f in /dev/shm/* /dev/shm/.[!.]*; do [ -e "$f" ] && echo "+ left in /dev/shm: ${f#/dev/shm/}"; done
exit $rc'
PRIVATE_SHM=0
if [ "${PRIVATE_SHM_OFF:-0}" != 1 ] &&
    unshare -m sh -c 'mount -t tmpfs rmb-tests-sos /dev/shm' >/dev/null 2>&1; then
    PRIVATE_SHM=1
fi

# ---------------------------------------------------------------- main
if [ "${NO_BUILD:-0}" != 1 ]; then
    get_sources || exit 1
    configure_sos || exit 1
fi
[ -f "$OBJ/Makefile" ] || { log "no build in $OBJ"; exit 1; }
COMMIT=$(cat "$SRC/COMMIT" 2>/dev/null || echo unknown)

LIST=$(list_tests)
[ -n "$LIST" ] || { log "no test matches TESTS=\"$TESTS_FILTER\""; exit 2; }
NTESTS=$(echo "$LIST" | wc -l)

if [ "${NO_BUILD:-0}" != 1 ]; then
    log "building $NTESTS tests (make -j1 per test, $JOBS at a time; logs in $LOGS/build)"
    echo "$LIST" | xargs -P "$JOBS" -L 1 bash -c 'build_one "$0" "$1"'
fi

: >"$BUILD_DIR/leftovers.txt"
: >"$BUILD_DIR/nobuild.txt"
COLS=""
for btl in $BTLS; do for np in $NPES; do COLS="$COLS np$np-$btl"; done; done
RES=$BUILD_DIR/results.tsv
printf 'test\tbuild%s\n' "$(for c in $COLS; do printf '\t%s' "$c"; done)" >"$RES"

n_built=0 n_pass=0 n_fail=0 n_to=0 n_allpass=0 n_nb=0
while read -r d t; do
    row="$d/$t"
    if [ -x "$OBJ/test/$d/$t" ]; then
        row="$row	ok"
        n_built=$((n_built + 1))
        all=1
        for btl in $BTLS; do
            for np in $NPES; do
                run_one "$d" "$t" "$btl" "$np"
                row="$row	$R"
                case $R in
                PASS) n_pass=$((n_pass + 1)) ;;
                TIMEOUT) n_to=$((n_to + 1)); all=0 ;;
                *) n_fail=$((n_fail + 1)); all=0 ;;
                esac
            done
        done
        n_allpass=$((n_allpass + all))
    else
        row="$row	NO"
        n_nb=$((n_nb + 1))
        for c in $COLS; do row="$row	NOBUILD"; done
        echo "$d/$t: $(missing_syms "$LOGS/build/$d/$t.log" 2>/dev/null)" >>"$BUILD_DIR/nobuild.txt"
    fi
    echo "$row" >>"$RES"
    log "$(echo "$row" | tr '\t' ' ')"
done <<EOF
$LIST
EOF

# Leftovers in the jobs' TMPDIR (oshrun's own directories).
if [ -n "$(ls -A "$RUNTMP" 2>/dev/null)" ]; then
    ls -A "$RUNTMP" | sed "s|^|TMPDIR leftover: |" >>"$BUILD_DIR/leftovers.txt"
    rm -rf "${RUNTMP:?}"/*
fi

n_runs=$((n_pass + n_fail + n_to))
TOTALS="tests: $NTESTS, built: $n_built, not built: $n_nb; runs: $n_runs, PASS: $n_pass, FAIL: $n_fail, TIMEOUT: $n_to; tests passing every run: $n_allpass"

# Plain table on stdout, markdown copy in results.md.
awk -F'\t' '{ for (i = 1; i <= NF; i++) { c[NR, i] = $i; if (length($i) > w[i]) w[i] = length($i) }
              if (NF > nf) nf = NF }
     END { for (r = 1; r <= NR; r++) { l = ""
             for (i = 1; i <= nf; i++) l = l sprintf("%-" (w[i] + 2) "s", c[r, i])
             sub(/ +$/, "", l); print l } }' "$RES"
echo
echo "$TOTALS"
echo "tests-sos commit: $COMMIT; rmb: $PREFIX; logs: $LOGS"
if [ -s "$BUILD_DIR/leftovers.txt" ]; then
    echo "leftovers (removed):"
    cat "$BUILD_DIR/leftovers.txt"
fi
{
    head -1 "$RES" | sed 's/\t/ | /g; s/^/| /; s/$/ |/'
    head -1 "$RES" | sed 's/[^\t]*/---/g; s/\t/|/g; s/^/|/; s/$/|/'
    tail -n +2 "$RES" | sed 's/\t/ | /g; s/^/| /; s/$/ |/'
    echo
    echo "$TOTALS"
} >"$BUILD_DIR/results.md"

[ "$n_nb" -eq 0 ] && [ "$n_fail" -eq 0 ] && [ "$n_to" -eq 0 ]
