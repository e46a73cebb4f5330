#!/bin/bash
# net-compare.sh: our OpenSHMEM over the network side by side with Open MPI's OSHMEM
# over UCX/TCP, and the wire floors, all in one run.
#
#   scripts/net-compare.sh [-n NP] [--nodes K] [--netns] [-r ROUNDS] [-i ITERS]
#                          [-u UPDATES] [--prefix DIR] [--build DIR] [--btl B] [--provider P]
#                          [--oshmem-mpi M]
#
#   -n NP          PEs (default 2)
#   --nodes K      emulated nodes for our runs (default 2; oshrun --nodes)
#   --netns        each of our nodes in its own network namespace (root)
#   -r ROUNDS      rounds; each runs ours and OSHMEM once, alternately (default 3)
#   -i ITERS       iterations of each latency loop (default 20000)
#   -u UPDATES     random-access updates per PE and mode (default 20000)
#   --prefix DIR   use DIR/bin/oshcc and DIR/bin/oshrun (an installed rmb)
#   --build DIR    else this build tree (default ./build), built with make first
#   --btl B        our network backend between the nodes: ucx (default) or ofi
#   --provider P   libfabric provider for ours (--btl ofi) and its floor (default tcp;ofi_rxm)
#   --oshmem-mpi M OSHMEM's MPI layer, which carries its collectives, across nodes:
#                  tcp (default; what Open MPI picks where UCX finds no RDMA device:
#                  pml ob1 over btl tcp) or ucx (pml ucx over the same UCX_TLS, so
#                  every OSHMEM row rides UCX, the wire ours uses with --btl ucx)
#
# Builds bench/net_probe.c and bench/gups.c with our compiler and with Open MPI's
# oshcc, runs ours over btl/ucx (UCX_TLS=tcp,self, the wire OSHMEM gets) or
# btl/ofi across the emulated nodes and OSHMEM with
# UCX_TLS=tcp,self (every PE pair over TCP on lo; its MPI layer, which
# carries its collectives, on btl self,tcp, or on UCX with --oshmem-mpi ucx)
# when --nodes > 1, with its default transports on one node, and measures in the same rounds
# the wire floors: fi_pingpong (the provider, RDM endpoint, 8 B, one-way) and,
# when ucx-utils is installed, ucx_perftest -t ucp_am_lat (one-way). Prints the
# median of each row, ours/OSHMEM, and ours/floor (latency rows against the
# round trip of the floor of our backend's wire). Rows ending in _GBs, _Mps or _Kups are rates (higher is
# better); the others are microseconds (lower is better).
# Extra launcher arguments for ours: OUR_RUN_ARGS; for OSHMEM: OSHMEM_RUN_ARGS
# (and OSHMEM_UCX_TLS for its transports; OUR_UCX_TLS for ours over ucx).
set -u

np=2 nodes=2 netns="" rounds=3 iters=20000 updates=20000 prefix="" provider="tcp;ofi_rxm" btl=ucx oshmem_mpi=tcp
here=$(cd "$(dirname "$0")/.." && pwd)
build=$here/build
usage() { sed -n '2,36p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
while [ $# -gt 0 ]; do
    case "$1" in
    -n) np=${2:?}; shift 2 ;;
    --nodes) nodes=${2:?}; shift 2 ;;
    --netns) netns=--netns; shift ;;
    -r) rounds=${2:?}; shift 2 ;;
    -i) iters=${2:?}; shift 2 ;;
    -u) updates=${2:?}; shift 2 ;;
    --prefix) prefix=${2:?}; shift 2 ;;
    --build) build=$(cd "${2:?}" && pwd) || exit 2; shift 2 ;;
    --provider) provider=${2:?}; shift 2 ;;
    --btl) btl=${2:?}; shift 2 ;;
    --oshmem-mpi) oshmem_mpi=${2:?}; shift 2 ;;
    -h|--help) usage ;;
    *) echo "net-compare: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
case "$btl" in ucx|ofi) ;; *) echo "net-compare: --btl ucx or ofi" >&2; exit 2 ;; esac
case "$oshmem_mpi" in tcp|ucx) ;; *) echo "net-compare: --oshmem-mpi tcp or ucx" >&2; exit 2 ;; esac
for v in "$np" "$nodes" "$rounds" "$iters" "$updates"; do
    case "$v" in ''|*[!0-9]*|0) echo "net-compare: counts must be positive integers" >&2; exit 2 ;; esac
done

work=$(mktemp -d /tmp/net-compare.XXXXXX) || exit 1
pids=""
# a floor's server runs in a subshell: its timeout (which passes the signal on) goes first
cleanup() { [ -n "$pids" ] && { pkill -P "$pids" 2>/dev/null; kill $pids 2>/dev/null; }; rm -rf "$work"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- build the probes ----------------------------------------------------------
if [ -n "$prefix" ]; then
    oshrun=$prefix/bin/oshrun
    ourcc() { "$prefix/bin/oshcc" -O2 "$@"; }
else
    make -C "$build" -j"$(nproc)" >/dev/null || { echo "net-compare: make in $build failed" >&2; exit 1; }
    oshrun=$build/oshrun/oshrun
    ourcc() { cc -O2 -I"$here/shmem" -I"$build/shmem" -I"$here/rpipe" "$@" -L"$build/.libs" \
                 -Wl,-rpath,"$build/.libs" -lrmb -pthread; }
fi
[ -x "$oshrun" ] || { echo "net-compare: no oshrun at $oshrun" >&2; exit 1; }
command -v /usr/bin/oshcc >/dev/null && command -v /usr/bin/oshrun >/dev/null ||
    { echo "net-compare: Open MPI's oshcc/oshrun missing (apt-get install openmpi-bin libopenmpi-dev)" >&2; exit 1; }
for p in net_probe gups; do
    ourcc "$here/bench/$p.c" -o "$work/ours_$p" || { echo "net-compare: our build of $p failed" >&2; exit 1; }
    /usr/bin/oshcc -O2 "$here/bench/$p.c" -o "$work/oshmem_$p" 2>"$work/oshcc.log" ||
        { echo "net-compare: OSHMEM build of $p failed:"; cat "$work/oshcc.log"; exit 1; } >&2
done

# ---- runners -------------------------------------------------------------------
rows='^[A-Za-z_0-9+]+ -?[0-9.]+$'
# Ours over UCX between emulated nodes gets TCP too: UCX would otherwise see
# one host and take shared memory.
our_tls=${OUR_UCX_TLS:-}
[ "$btl" = ucx ] && [ "$nodes" -gt 1 ] && our_tls=${our_tls:-tcp,self}
ours() {  # ours PROGRAM ARGS...
    env RMB_BTL_NET=$btl RMB_OFI_PROVIDER=$provider ${our_tls:+UCX_TLS=$our_tls} timeout 300 \
        "$oshrun" ${OUR_RUN_ARGS:-} -n "$np" --nodes "$nodes" \
        $netns "$work/ours_$1" "${@:2}" 2>>"$work/ours.err" | grep -E "$rows"
}
# OSHMEM's collectives go through Open MPI's MPI layer, over shared memory
# (btl vader) by default, whatever UCX_TLS says: across emulated nodes its
# MPI layer is put on TCP too (btl self,tcp). It cannot place PEs on
# emulated nodes: every pair of its PEs talks over TCP then.
# On one node (--nodes 1) both use shared memory: OSHMEM keeps UCX's default
# transports (OSHMEM_UCX_TLS overrides either choice).
oshmem_mca="" oshmem_tls=${OSHMEM_UCX_TLS:-}
if [ "$nodes" -gt 1 ]; then
    oshmem_mca="--mca btl self,tcp"
    # pml ucx takes only RDMA devices unless told otherwise
    [ "$oshmem_mpi" = ucx ] && oshmem_mca="$oshmem_mca --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any"
    oshmem_tls=${oshmem_tls:-tcp,self}
fi
oshmem() {  # oshmem PROGRAM ARGS... (OSHMEM 4.1.4 may crash in finalize after printing)
    env ${oshmem_tls:+UCX_TLS=$oshmem_tls} timeout 300 /usr/bin/oshrun --allow-run-as-root \
        --oversubscribe ${oshmem_tls:+-x UCX_TLS} $oshmem_mca ${OSHMEM_RUN_ARGS:-} -np "$np" "$work/oshmem_$1" "${@:2}" 2>>"$work/oshmem.err" |
        grep -E "$rows"
}
floor_fi() {  # fi_pingpong one-way µs for 8 B
    command -v fi_pingpong >/dev/null || return 0
    local port=$((20000 + RANDOM % 20000)) out
    # sockets' progress threads spin 10 ms before they sleep (FI_SOCKETS_PE_WAITTIME):
    # on 2 cores they starve the pinging processes (4.8 ms one-way); btl/ofi sets 0 too
    (FI_SOCKETS_PE_WAITTIME=0 timeout 60 fi_pingpong -p "$provider" -e rdm -S 8 -I 2000 -B "$port" >/dev/null 2>&1; true) 2>/dev/null &
    pids=$!
    sleep 0.5
    out=$(FI_SOCKETS_PE_WAITTIME=0 timeout 60 fi_pingpong -p "$provider" -e rdm -S 8 -I 2000 -P "$port" 127.0.0.1 2>/dev/null)
    wait $pids 2>/dev/null; pids=""
    echo "$out" | awk '$1 == "8" && NF >= 8 { print "floor_fi_oneway", $(NF-1) }'
}
floor_ucx() {  # ucx_perftest ucp_am_lat one-way µs (typical)
    command -v ucx_perftest >/dev/null || return 0
    local port=$((20000 + RANDOM % 20000)) out
    # quietly, also when it crashes (a UCX on LD_LIBRARY_PATH other than the one it was built for)
    (UCX_TLS=tcp,self timeout 60 ucx_perftest -p "$port" >/dev/null 2>&1; true) 2>/dev/null &
    pids=$!
    sleep 0.5
    out=$(UCX_TLS=tcp,self timeout 60 ucx_perftest -p "$port" -t ucp_am_lat -s 8 -n 20000 127.0.0.1 2>/dev/null)
    wait $pids 2>/dev/null; pids=""
    echo "$out" | awk '/^Final:/ { print "floor_ucx_oneway", $3 }'
}

wire=$provider; [ "$btl" = ucx ] && wire="ucx (UCX_TLS=${our_tls:-default})"
echo "net-compare: $np PEs, ours on $nodes emulated node(s) ${netns:+(netns) }over $wire," \
     "OSHMEM with UCX_TLS=${oshmem_tls:-default}${oshmem_mca:+ (MPI layer: $oshmem_mpi)}; $rounds round(s); load $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$rounds"); do
    floor_fi >>"$work/floor.txt"
    floor_ucx >>"$work/floor.txt"
    ours net_probe "$iters" >>"$work/ours.txt"
    oshmem net_probe "$iters" >>"$work/oshmem.txt"
    for m in amo fetch getput; do
        ours gups -m $m -u "$updates" >>"$work/ours.txt"
        oshmem gups -m $m -u "$updates" >>"$work/oshmem.txt"
    done
    echo "  round $r done (load $(cut -d' ' -f1 /proc/loadavg))" >&2
done

# ---- table ---------------------------------------------------------------------
med() { grep "^$1 " "$2" 2>/dev/null | awk '{print $2}' | sort -g |
        awk '{a[NR]=$1} END{if(NR) print a[int((NR+1)/2)]; else print "nan"}'; }
fi_floor=$(med floor_fi_oneway "$work/floor.txt")
ucx_floor=$(med floor_ucx_oneway "$work/floor.txt")
floor=$fi_floor floor_name=fi_rtt
[ "$btl" = ucx ] && floor=$ucx_floor floor_name=ucx_rtt
echo
shown() { if [ "$1" = nan ]; then echo "no result"; else echo "$1 µs"; fi; }
echo "wire floor, one-way 8 B (median): fi_pingpong $provider $(shown "$fi_floor");" \
     "ucx_perftest ucp_am_lat tcp $(shown "$ucx_floor")"
printf "%-16s %12s %12s %14s %14s\n" row ours oshmem "ours/oshmem" "ours/$floor_name"
for m in $(awk '{print $1}' "$work/ours.txt" "$work/oshmem.txt" | grep -v '_errors$' | awk '!s[$0]++'); do
    o=$(med "$m" "$work/ours.txt"); s=$(med "$m" "$work/oshmem.txt")
    printf "%-16s %12s %12s %14s %14s\n" "$m" "$o" "$s" \
        "$(awk -v o="$o" -v s="$s" 'BEGIN{ if (o=="nan"||s=="nan"||s==0) print "-"; else printf "%.2f", o/s }')" \
        "$(awk -v m="$m" -v o="$o" -v f="$floor" 'BEGIN{ if (m ~ /_(GBs|Mps|Kups)$/ || o=="nan" || f=="nan" || f==0) print "-"; else printf "%.2f", o/(2*f) }')"
done
for who in ours oshmem; do
    for m in amo fetch getput; do
        e=$(grep "^gups_${m}_errors " "$work/$who.txt" | awk '{print $2}' | sort -g | tail -1)
        [ -n "$e" ] && [ "$e" != 0 ] && echo "$who: gups $m: up to $e wrong words (HPCC allows 1% for getput)"
    done
done
echo "(rates: *_GBs, *_Mps, *_Kups, higher is better, ratio > 1 is ours faster;"
echo " latencies in µs, ratio < 1 is ours faster; ours/$floor_name: latency over the round trip of"
echo " fi_pingpong (ofi) or ucx_perftest ucp_am_lat (ucx))"
if [ -s "$work/ours.err" ]; then
    echo "ours, stderr (first lines):"; head -5 "$work/ours.err"
fi
