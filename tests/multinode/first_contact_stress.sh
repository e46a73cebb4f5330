#!/bin/bash
# First contact under stress (docs/multinode.md): REPS fresh oshrun jobs of
# tests/multinode/mp_first_contact per configuration, shm within a node and
# btl/ofi tcp;ofi_rxm between emulated nodes, each job bounded; prints one
# line per failed or slow run and a summary per configuration (failed, hung,
# slow, min/median/max wall time and first-contact time).
#
#   cd BUILD && ../tests/multinode/first_contact_stress.sh [options] [NP:NODES[:netns] ...]
#
#   -r REPS     jobs per configuration (default 100)
#   -l LOADERS  busy loops on the machine while the jobs run (default 0)
#   -o ORDER    xor, rotate, same (mp_first_contact's orders) or alt
#               (the three in turn; default)
#   -t SECONDS  wall-clock limit of one job (default 60)
#   -s SECONDS  a job slower than this is listed as slow (default 2)
#   -k DIR      keep the output of failed and slow jobs in DIR (default:
#               a fresh directory under /tmp, named at the end)
#   -c          count rxm's simultaneous-connection collisions (both peers
#               connecting to each other at once: one side rejects, the
#               other drops its own request and accepts) in each job's
#               FI_LOG_LEVEL=info log, to show the race was exercised
#   -g SECONDS  a job still running after this long is diagnosed before the
#               bounded waits end it: each thread's state, wait channel and
#               kernel stack, then backtraces of every thread of its PEs
#               (gdb: stops each PE a while, so it slows the job), their TCP
#               sockets (ss, in each node's namespace) and 1 s of strace,
#               appended to its log (default 8; 0: never)
# Configurations default to 4:2 8:4 4:2:netns 8:4:netns; the netns ones are
# skipped with a line when not root. Environment: RMB_OFI_TIMEOUT_SEC
# (default 10: a stuck connection fails the job after 10 s instead of 60),
# FI_PROVIDER (default 'tcp;ofi_rxm'), and anything else is passed on
# (RMB_LOG_LEVEL=debug, FI_LOG_LEVEL=warn to diagnose).
set -u

reps=100 loaders=0 order=alt limit=60 slow=2 keep="" diag=8 collisions=0
while getopts "r:l:o:t:s:k:g:ch" opt; do
    case $opt in
    r) reps=$OPTARG ;;
    l) loaders=$OPTARG ;;
    o) order=$OPTARG ;;
    t) limit=$OPTARG ;;
    s) slow=$OPTARG ;;
    k) keep=$OPTARG ;;
    g) diag=$OPTARG ;;
    c) collisions=1 ;;
    *) sed -n '2,/^set -u/p' "$0" | sed '$d'; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
configs=("$@")
orders=(xor rotate same)
[ ${#configs[@]} -gt 0 ] || configs=(4:2 8:4 4:2:netns 8:4:netns)

build=$(pwd)
oshrun=$build/oshrun/oshrun
prog=$build/tests/multinode/mp_first_contact
if [ ! -x "$oshrun" ] || [ ! -x "$prog" ]; then
    echo "first_contact_stress: run from a build directory after" \
         "'make tests/multinode/mp_first_contact'" >&2
    exit 2
fi
diag_us=$(awk -v s="$diag" 'BEGIN { printf "%d", s * 1000000 }')
[ -n "$keep" ] || keep=$(mktemp -d /tmp/first_contact.XXXXXX)
mkdir -p "$keep"

export RMB_BTL=auto
export FI_PROVIDER=${FI_PROVIDER:-tcp;ofi_rxm}
export RMB_OFI_TIMEOUT_SEC=${RMB_OFI_TIMEOUT_SEC:-10}
[ "$collisions" = 0 ] || export FI_LOG_LEVEL=info

loader_pids=()
stop_loaders() {
    for pid in "${loader_pids[@]}"; do kill "$pid" 2>/dev/null; done
    for pid in "${loader_pids[@]}"; do wait "$pid" 2>/dev/null; done
    loader_pids=()
}
trap stop_loaders EXIT
trap 'stop_loaders; exit 130' INT TERM
# Each loader is bounded by timeout even if this script is killed -9.
for ((i = 0; i < loaders; i++)); do
    timeout $((reps * limit * ${#configs[@]} + 60)) bash -c 'while :; do :; done' &
    loader_pids+=($!)
done

# Processes below pid (children first-level and deeper).
descendants() {
    local kid
    for kid in $(ps -o pid= --ppid "$1"); do
        echo "$kid"
        descendants "$kid"
    done
}

# Appends what the PEs under pid are doing to file: every thread's stack,
# the node's TCP sockets, 1 s of system calls.
diagnose() {
    local pid=$1 file=$2 pe seen=""
    : >"$file"
    {
        echo "==== $(date +%T.%N): still running after $diag s; load $(cut -d' ' -f1-3 /proc/loadavg)"
        # first what costs nothing and stops no one: each thread's state,
        # kernel wait channel, system call and kernel stack
        for pe in $(descendants "$pid"); do
            case $(cat /proc/"$pe"/comm 2>/dev/null) in mp_first_conta*) ;; *) continue ;; esac
            for task in /proc/"$pe"/task/*; do
                echo "== $pe/${task##*/}: state $(cut -d' ' -f3 "$task"/stat 2>/dev/null)," \
                     "wchan $(cat "$task"/wchan 2>/dev/null), syscall $(cut -d' ' -f1 "$task"/syscall 2>/dev/null)"
                sed 's/^/     /' "$task"/stack 2>/dev/null | head -8
            done
        done
        for pe in $(descendants "$pid"); do
            case $(cat /proc/"$pe"/comm 2>/dev/null) in mp_first_conta*) ;; *) continue ;; esac
            echo "==== PE process $pid > $pe: $(tr '\0' ' ' </proc/"$pe"/environ 2>/dev/null |
                 grep -o 'PMIX_RANK=[0-9]*')"
            timeout 30 gdb -p "$pe" -batch -nx -ex 'thread apply all bt' 2>&1 |
                grep -v '^\[New LWP\|^\[Thread debugging\|^Using host libthread'
            local ns
            ns=$(readlink /proc/"$pe"/ns/net)
            case " $seen " in *" $ns "*) ;; *)
                seen="$seen $ns"
                echo "==== TCP sockets in $ns"
                nsenter -t "$pe" -n ss -tanp 2>&1 ;;
            esac
        done
        for pe in $(descendants "$pid"); do
            case $(cat /proc/"$pe"/comm 2>/dev/null) in mp_first_conta*) ;; *) continue ;; esac
            echo "==== strace -f -p $pe, 1 s"
            timeout -s INT 1 strace -f -tt -p "$pe" 2>&1 | tail -40
        done
    } >>"$file" 2>&1
}

# min median max of the numbers on stdin
stats() { sort -g | awk '{v[NR] = $1} END {
    if (NR == 0) { print "- - -"; exit }
    m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
    printf "%s %s %s\n", v[1], m, v[NR] }'; }

status=0
echo "first_contact_stress: $reps jobs per configuration, $loaders busy loops," \
     "RMB_OFI_TIMEOUT_SEC=$RMB_OFI_TIMEOUT_SEC, FI_PROVIDER=$FI_PROVIDER," \
     "load $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
for config in "${configs[@]}"; do
    IFS=: read -r np nodes netns <<<"$config"
    flags=(-n "$np" --nodes "$nodes")
    if [ "$netns" = netns ]; then
        if [ "$(id -u)" != 0 ]; then
            echo "SKIP $config: oshrun --netns needs root"
            continue
        fi
        flags+=(--netns)
    fi
    walls=() fcs=() failed=0 hung=0 slow_n=0 coll=0 coll_jobs=0
    for ((r = 1; r <= reps; r++)); do
        o=$order
        [ "$order" = alt ] && o=${orders[$(((r - 1) % 3))]}
        out=$keep/$config.$r.log
        t0=$EPOCHREALTIME
        FIRST_CONTACT_T0=$t0 timeout -k 5 "$limit" "$oshrun" "${flags[@]}" "$prog" "$o" >"$out" 2>&1 &
        job=$!
        watch=""
        if [ "$diag" != 0 ]; then
            # ends by itself within 0.1 s of the job (no signal to it, no "Terminated")
            (end=$((${EPOCHREALTIME/./} + diag_us))
             while kill -0 "$job" 2>/dev/null; do
                 if [ "${EPOCHREALTIME/./}" -gt "$end" ]; then
                     diagnose "$job" "$out.diag"
                     exit 0
                 fi
                 sleep 0.1
             done) &
            watch=$!
        fi
        wait "$job"
        rc=$?
        t1=$EPOCHREALTIME
        if [ -n "$watch" ]; then
            wait "$watch"   # a diagnosis under way finishes first
            if [ -e "$out.diag" ]; then cat "$out.diag" >>"$out"; rm -f "$out.diag"; fi
        fi
        wall=$(echo "$t1 - $t0" | bc)
        walls+=("$wall")
        fc=$(sed -n 's/.*first contact \([0-9.]*\) ms.*/\1/p' "$out")
        if [ "$collisions" = 1 ]; then
            c=$(grep -c 'simultaneous, \(reject\|accept\) peer' "$out")
            coll=$((coll + c))
            [ "$c" = 0 ] || coll_jobs=$((coll_jobs + 1))
        fi
        [ -n "$fc" ] && fcs+=("$fc")
        if [ $rc != 0 ]; then
            failed=$((failed + 1))
            if [ $rc = 124 ] || [ $rc = 137 ] || grep -q "no completion after" "$out"; then
                hung=$((hung + 1))
            fi
            echo "FAIL $config job $r ($o): exit $rc after ${wall} s: $(grep -v '^libfabric:' "$out" | grep -m1 -iE 'error|^PE ')"
        elif [ "$(echo "$wall > $slow" | bc)" = 1 ]; then
            slow_n=$((slow_n + 1))
            echo "SLOW $config job $r ($o): ${wall} s: $(grep "^mp_first_contact" "$out" |
                 sed 's/^mp_first_contact: //' | tr '\n' ' ')"
        else
            rm -f "$out"
        fi
    done
    read -r wmin wmed wmax < <(printf '%s\n' "${walls[@]}" | stats)
    read -r fmin fmed fmax < <(printf '%s\n' "${fcs[@]}" | stats)
    printf '%-12s %d jobs: %d failed (%d hung), %d over %s s; wall min/median/max %.2f/%.2f/%.2f s;' \
           "$config" "$reps" "$failed" "$hung" "$slow_n" "$slow" "$wmin" "$wmed" "$wmax"
    printf ' first contact %s/%s/%s ms' "$fmin" "$fmed" "$fmax"
    [ "$collisions" = 0 ] || printf '; %d connection collisions in %d jobs' "$coll" "$coll_jobs"
    printf '\n'
    [ $failed = 0 ] || status=1
done
echo "load at the end $(cut -d' ' -f1-3 /proc/loadavg); logs of failed/slow jobs: $keep"
exit $status
