#!/bin/bash
# Latency of our OpenSHMEM over btl/mpi against OSHMPI (pmodels/oshmpi, an
# OpenSHMEM on MPI-3 RMA), same MPI, same launcher, same benchmark source.
#
# usage: scripts/oshmpi-compare.sh OSHMPI_PREFIX OUR_PREFIX [MPI] [ITERS] [ROUNDS]
#   OSHMPI_PREFIX  an OSHMPI install (bin/oshcc) configured with MPI's mpicc
#   OUR_PREFIX     our install (bin/oshcc, lib/rmb/rmb_mpi_<MPI>.so)
#   MPI            mpich (mpiexec.mpich, default) or openmpi (mpirun.openmpi)
#   ITERS          operations per timed loop (default 2000; collectives ITERS/4)
#   ROUNDS         interleaved repetitions (default 5); the table shows medians
# Runs 2 PEs per program, one node. Four columns per round, in turn:
#   oshmpi    OSHMPI as configured (extra environment: OSHMPI_ENV="VAR=x ...")
#   rmb_mpi   ours, MPI bootstrap, every peer through btl/mpi (RMB_BTL=mpi):
#             loads and stores on its shared pool window (the default)
#   rmb_rma   the same through MPI RMA only (RMB_MPI_LOAD_STORE=no)
#   rmb_shm   ours, MPI bootstrap, default btl choice (shm on the node)
# The probe (below) uses only OpenSHMEM 1.4 calls, so one source builds with both.
set -u
usage="usage: $0 OSHMPI_PREFIX OUR_PREFIX [mpich|openmpi] [ITERS] [ROUNDS]"
oshmpi=${1:?$usage} ours=${2:?$usage} mpi=${3:-mpich} iters=${4:-2000} rounds=${5:-5}
[[ $iters =~ ^[0-9]+$ && $iters -ge 40 && $rounds =~ ^[0-9]+$ && $rounds -ge 1 ]] ||
  { echo "$0: ITERS must be >= 40 and ROUNDS >= 1"; echo "$usage"; exit 2; }
for p in "$oshmpi/bin/oshcc" "$ours/bin/oshcc"; do
  [ -x "$p" ] || { echo "$0: $p not found"; exit 2; }
done
case $mpi in
  mpich)   launch=(mpiexec.mpich -n 2) ;;
  openmpi) launch=(mpirun.openmpi --oversubscribe -np 2)
           [ "$(id -u)" = 0 ] && launch+=(--allow-run-as-root) ;;
  *) echo "$0: MPI must be mpich or openmpi"; exit 2 ;;
esac
command -v "${launch[0]}" >/dev/null || { echo "$0: ${launch[0]} not found"; exit 2; }
[ -e "$ours/lib/rmb/rmb_mpi_$mpi.so" ] ||
  { echo "$0: $ours/lib/rmb/rmb_mpi_$mpi.so missing (configure found no $mpi)"; exit 2; }

work=$(mktemp -d /tmp/oshmpi-compare.XXXXXX) || exit 1
trap 'rm -rf "$work"' EXIT
cat >"$work/probe.c" <<'EOF'
/* PE 0 -> PE n-1 latency, µs per operation: the median over 5 trials of
 * a whole loop's mean (one timer per loop). Collectives run on every PE. */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define TRIALS 5
static int me;
static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec * 1e-3;
}
static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}
#define ROW(name, iters, every_pe, BODY)                                  \
    do {                                                                  \
        double t_[TRIALS];                                                \
        for (int k_ = 0; k_ < TRIALS; k_++) {                             \
            shmem_barrier_all();                                          \
            double t0_ = now_us();                                        \
            if ((every_pe) || me == 0)                                    \
                for (long i = 0; i < (iters); i++) { BODY; }              \
            t_[k_] = (now_us() - t0_) / (double)(iters);                  \
            shmem_quiet();                                                \
        }                                                                 \
        qsort(t_, TRIALS, sizeof(double), by_value);                      \
        if (me == 0) printf("%s %.3f\n", name, t_[TRIALS / 2]);           \
    } while (0)

int main(int argc, char **argv)
{
    static long psync[2][SHMEM_REDUCE_SYNC_SIZE], pwrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
    static long word; /* static data: the other symmetric segment */
    long iters = argc > 1 ? atol(argv[1]) : 2000, v = 0, sink = 0;

    shmem_init();
    me = shmem_my_pe();
    int npes = shmem_n_pes(), peer = npes - 1;
    long *buf = shmem_malloc(4096), *src = shmem_malloc(64), *dst = shmem_malloc(64 * npes);
    long *lbuf = malloc(4096);
    for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++) psync[0][i] = psync[1][i] = SHMEM_SYNC_VALUE;
    for (int i = 0; i < 512; i++) lbuf[i] = i;
    src[0] = me;
    shmem_barrier_all();
    ROW("put8_quiet", iters, 0, { shmem_putmem(buf, lbuf, 8, peer); shmem_quiet(); });
    ROW("put8", iters, 0, shmem_putmem(buf, lbuf, 8, peer));
    ROW("p", iters, 0, shmem_long_p(buf, i, peer));
    ROW("get8", iters, 0, shmem_getmem(lbuf, buf, 8, peer));
    ROW("g", iters, 0, sink += shmem_long_g(buf, peer));
    ROW("put4k_quiet", iters, 0, { shmem_putmem(buf, lbuf, 4096, peer); shmem_quiet(); });
    ROW("get4k", iters, 0, shmem_getmem(lbuf, buf, 4096, peer));
    ROW("add", iters, 0, shmem_long_atomic_add(&word, 1, peer));
    ROW("fetch_add", iters, 0, v += shmem_long_atomic_fetch_add(&word, 1, peer));
    ROW("fetch", iters, 0, v += shmem_long_atomic_fetch(&word, peer));
    ROW("cswap", iters, 0, v += shmem_long_atomic_compare_swap(&word, v, v + 1, peer));
    ROW("swap", iters, 0, v += shmem_long_atomic_swap(&word, v, peer));
    ROW("heap_fadd", iters, 0, v += shmem_long_atomic_fetch_add(buf + 8, 1, peer));
    ROW("barrier_all", iters / 4, 1, shmem_barrier_all());
    ROW("bcast8", iters / 4, 1,
        { shmem_broadcast64(dst, src, 1, 0, 0, 0, npes, psync[0]); shmem_barrier_all(); });
    ROW("sum_to_all8", iters / 4, 1,
        shmem_long_sum_to_all(dst, src, 1, 0, 0, npes, pwrk, psync[i & 1]));
    ROW("fcollect8", iters / 4, 1, shmem_fcollect64(dst, src, 1, 0, 0, npes, psync[i & 1]));
    shmem_barrier_all();
    if (sink == 42 && v == 42) printf("#\n"); /* keep the loads */
    free(lbuf);
    shmem_free(dst);
    shmem_free(src);
    shmem_free(buf);
    shmem_finalize();
    return 0;
}
EOF
"$oshmpi/bin/oshcc" -O2 "$work/probe.c" -o "$work/oshmpi" || { echo "$0: OSHMPI's oshcc failed"; exit 1; }
"$ours/bin/oshcc" -O2 "$work/probe.c" -o "$work/rmb" || { echo "$0: our oshcc failed"; exit 1; }

run() { # column, environment..., then the program
  local col=$1; shift
  env "$@" timeout 300 "${launch[@]}" "$work/${col%%_*}" "$iters" 2>"$work/err" |
    grep -E '^[a-z_0-9]+ [0-9.]+$' >>"$work/$col.txt" ||
    { echo "$col: round $r failed:"; tail -3 "$work/err"; }
}
echo "# $mpi, 2 PEs, $iters iterations, $rounds rounds; $(nproc) CPUs; load before:$(uptime | sed 's/.*average://')"
for r in $(seq "$rounds"); do
  # shellcheck disable=SC2086 # OSHMPI_ENV is a list of VAR=value words
  run oshmpi ${OSHMPI_ENV:-}
  run rmb_mpi RMB_BOOTSTRAP=mpi RMB_BTL=mpi
  run rmb_rma RMB_BOOTSTRAP=mpi RMB_BTL=mpi RMB_MPI_LOAD_STORE=no
  run rmb_shm RMB_BOOTSTRAP=mpi
done
echo "# load after:$(uptime | sed 's/.*average://')"
median() { awk -v m="$1" '$1 == m {print $2}' "$work/$2.txt" 2>/dev/null | sort -g |
           awk '{a[NR] = $1} END {print NR ? a[int((NR + 1) / 2)] : "nan"}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {print (a == "nan" || b == "nan" || b == 0) ? "-" : sprintf("%.2f", a / b)}'; }
printf "%-12s %10s %10s %8s %10s %8s %10s %8s\n" metric oshmpi rmb_mpi ratio rmb_rma ratio \
  rmb_shm ratio
for m in $(awk '!seen[$1]++ {print $1}' "$work"/*.txt); do
  o=$(median "$m" oshmpi) a=$(median "$m" rmb_mpi) c=$(median "$m" rmb_rma)
  b=$(median "$m" rmb_shm)
  printf "%-12s %10s %10s %8s %10s %8s %10s %8s\n" "$m" "$o" "$a" "$(ratio "$a" "$o")" \
    "$c" "$(ratio "$c" "$o")" "$b" "$(ratio "$b" "$o")"
done
echo "(µs per operation, median of the rounds; ratio = ours / OSHMPI, lower is better)"
