#!/bin/sh
# Two emulated nodes for MPICH's hydra (tests/btl/check_btl_mpi.c, root only).
#
#   mpi_netns.sh setup HUB_PID NODE_PID...
#       Each pid holds an empty network namespace (check_btl_mpi.c: they go
#       when the test ends, whatever the cause). HUB's gets a bridge br0 =
#       10.213.8.254/24, node k's an interface rmb0 = 10.213.8.k/24 linked
#       to it. Nothing is created in the caller's namespace.
#
#   mpi_netns.sh [ssh options] HOST COMMAND...
#       hydra's launcher (mpiexec -launcher ssh -launcher-exec this): runs
#       COMMAND in the network namespace of HOST = 10.213.8.k, the k-th pid
#       of MP_NETNS_PIDS, under its own host name (a UTS namespace) and with
#       a sysfs of that namespace (a mount namespace): UCX finds its network
#       devices in /sys/class/net.
set -eu
if [ "${1:-}" = setup ]; then
    hub=$2
    shift 2
    nsenter -t "$hub" -n sh -ec 'ip link set lo up; ip link add br0 type bridge
        ip addr add 10.213.8.254/24 dev br0; ip link set br0 up'
    k=1
    for node in "$@"; do
        ip link add "rmbh$k" netns "$hub" type veth peer name rmb0 netns "$node"
        nsenter -t "$hub" -n ip link set "rmbh$k" master br0 up
        nsenter -t "$node" -n sh -ec "ip link set lo up; ip addr add 10.213.8.$k/24 dev rmb0
            ip link set rmb0 up"
        k=$((k + 1))
    done
    exit 0
fi
while [ $# -gt 0 ]; do
    case $1 in -*) shift ;; *) break ;; esac
done
host=${1:?usage: mpi_netns.sh setup HUB_PID NODE_PID... | [ssh options] HOST COMMAND...}
shift
k=${host#10.213.8.}
pid=$(echo "${MP_NETNS_PIDS:?}" | cut -d' ' -f"$k")
[ -n "$pid" ] || { echo "mpi_netns.sh: no node for host $host" >&2; exit 1; }
# hydra hands the proxy's command line as words for a shell, as ssh would
exec nsenter -t "$pid" -n unshare --uts --mount sh -c \
    'mount -t sysfs sysfs /sys && hostname "rmbnode$1" && shift && exec sh -c "$*"' sh "$k" "$@"
