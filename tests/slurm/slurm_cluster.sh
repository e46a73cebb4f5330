#!/bin/sh
# A two-node Slurm cluster on one host, for tests/slurm/check_slurm.c.
#
#   slurm_cluster.sh DIR
#       Run by check_slurm as the first process of new PID, mount, network
#       and UTS namespaces (unshare --pid --fork --kill-child --mount-proc
#       --mount --net --uts): when this script ends, or the test that
#       started it dies, the kernel ends every daemon, step and PE with it,
#       and the namespaces, links and mounts go too. DIR (empty, made by the
#       test) gets a tmpfs for every file of the cluster; /dev/shm gets its
#       own tmpfs. This namespace is the control host "rmbctl" (munged,
#       slurmctld, and where srun/sbatch/salloc run, through nsenter) with a
#       bridge br0 = 10.213.9.254/24; node k (node1, node2) is its own
#       network, UTS and mount namespace with a link rmb0 = 10.213.9.k/24 to
#       the bridge and a slurmd. Prints "ready" on stdout when both nodes
#       are idle, or "skip: WHY" / "error: WHY", then waits to be killed.
set -u
nodes=2
net=10.213.9

dir=${1:?usage: slurm_cluster.sh DIR}

fail() { echo "error: $*"; exec sleep infinity; }

for cmd in munged slurmctld slurmd sinfo ip nsenter; do
    command -v "$cmd" >/dev/null 2>&1 || { echo "skip: $cmd is not installed"; exec sleep infinity; }
done
mount -t tmpfs -o mode=0700 rmbslurm "$dir" || fail "cannot mount a tmpfs on $dir"
mount -t tmpfs -o mode=1777 rmbshm /dev/shm || fail "cannot mount a tmpfs on /dev/shm"
hostname rmbctl
mkdir -p "$dir/munge" "$dir/ctld" "$dir/tmp" "$dir/log"
chmod 0700 "$dir/munge"

ip link set lo up && ip link add br0 type bridge && ip addr add "$net.254/24" dev br0 &&
    ip link set br0 up || fail "cannot set up the bridge"

# munge: own key and socket; nothing of the host's /etc/munge or /run/munge.
dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 2>/dev/null
chmod 0400 "$dir/munge/munge.key"
munged --force --origin="$net.254" --socket="$dir/munge/munge.socket" --key-file="$dir/munge/munge.key" \
    --pid-file="$dir/munge/munged.pid" --log-file="$dir/log/munged.log" \
    --seed-file="$dir/munge/munged.seed" || fail "munged did not start (see $dir/log/munged.log)"

conf=$dir/slurm.conf
{
    echo "ClusterName=rmbtest"
    echo "SlurmctldHost=rmbctl($net.254)"
    echo "SlurmUser=root"
    echo "SlurmdUser=root"
    echo "AuthType=auth/munge"
    echo "AuthInfo=socket=$dir/munge/munge.socket"
    echo "CredType=cred/munge"
    echo "StateSaveLocation=$dir/ctld"
    echo "SlurmdSpoolDir=$dir/spool/%n"
    echo "SlurmctldPidFile=$dir/slurmctld.pid"
    echo "SlurmdPidFile=$dir/slurmd.%n.pid"
    echo "SlurmctldLogFile=$dir/log/slurmctld.log"
    echo "SlurmdLogFile=$dir/log/slurmd.%n.log"
    echo "TmpFS=$dir/tmp/%n"
    echo "PlugStackConfig=$dir/plugstack.conf"
    echo "ProctrackType=proctrack/pgid"
    echo "TaskPlugin=task/none"
    echo "JobAcctGatherType=jobacct_gather/none"
    echo "AccountingStorageType=accounting_storage/none"
    echo "JobCompType=jobcomp/none"
    echo "SchedulerType=sched/builtin"
    echo "SelectType=select/cons_tres"
    echo "SelectTypeParameters=CR_Core"
    echo "MpiDefault=none"
    echo "ReturnToService=2"
    echo "SlurmdParameters=config_overrides"
    echo "KillWait=2"
    echo "MinJobAge=2"
    echo "InactiveLimit=0"
    echo "MailProg=/bin/true"
    for k in $(seq 1 $nodes); do
        echo "NodeName=node$k NodeAddr=$net.$k CPUs=4 State=UNKNOWN"
    done
    echo "PartitionName=test Nodes=node[1-$nodes] Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4"
} > "$conf"
: > "$dir/plugstack.conf"
export SLURM_CONF="$conf"

slurmctld -D -i -f "$conf" > "$dir/log/slurmctld.out" 2>&1 &

for k in $(seq 1 $nodes); do
    mkdir -p "$dir/spool/node$k" "$dir/tmp/node$k"
    # The node's namespaces, held by a sleep until this script ends.
    # A fresh sysfs shows the node's own links (UCX reads /sys/class/net);
    # the host's cgroup file systems are carried over into it, as slurmd
    # wants to see them (no plugin here creates cgroups).
    unshare --net --uts --mount sh -c "mkdir -p $dir/cgroup.node$k &&
        mount --rbind /sys/fs/cgroup $dir/cgroup.node$k && mount -t sysfs sysfs /sys &&
        mount --move $dir/cgroup.node$k /sys/fs/cgroup && hostname node$k &&
        exec sleep infinity" &
    holder=$!
    for _ in $(seq 1 50); do
        [ "$(readlink /proc/$holder/ns/uts)" != "$(readlink /proc/self/ns/uts)" ] && break
        sleep 0.1
    done
    ip link add "rmbh$k" type veth peer name rmb0 netns "$holder" &&
        ip link set "rmbh$k" master br0 up &&
        nsenter -t "$holder" -n sh -ec "ip link set lo up; ip addr add $net.$k/24 dev rmb0
            ip link set rmb0 up" || fail "cannot link node$k to the bridge"
    nsenter -t "$holder" -n -u -m slurmd -D -N "node$k" -f "$conf" \
        > "$dir/log/slurmd.node$k.out" 2>&1 &
done

# Ready when every node is idle.
for _ in $(seq 1 300); do
    idle=$(sinfo -h -N -t idle -o %N 2>/dev/null | sort -u | wc -l)
    if [ "$idle" -eq "$nodes" ]; then
        echo ready
        # As the cluster's pid 1 this shell inherits orphans: waiting for
        # its own children reaps them too (a zombie left in a job's process
        # group would make slurmd drain the node: "Kill task failed").
        while :; do sleep 1; done
    fi
    sleep 0.1
done
fail "the nodes did not become idle in 30 s: $(sinfo -N 2>&1 | tr '\n' ' ')" \
    "$(tail -q -n 3 "$dir"/log/slurmctld.out "$dir"/log/slurmd.node*.out 2>&1 | tr '\n' ' ')"
