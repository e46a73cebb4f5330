#!/bin/bash
# apps-compare.sh: runs the application study (examples/halo, em3d, dht) in
# all four variants (rpipe, OpenSHMEM, MPI two-sided, MPI-3 RMA) at the same
# sizes and PE counts, checks that every run verified (check=PASS), and
# writes a table (stdout and OUT/apps.txt), OUT/apps.csv and OUT/apps.png.
#
#   scripts/apps-compare.sh [-B builddir] [-n "2 4"] [-s "small large"] [-a "halo em3d dht"]
#                           [-r reps] [-b shm|ofi] [-o outdir]
#
# The time of a run is the slowest PE's time of the timed loop (each
# program prints it); the table shows the median over reps runs. Speedups
# are time(MPI) / time(variant), so > 1 means faster than MPI; for the DHT
# the rate is inserts/s and the speedups are rate ratios. See docs/apps.md.
set -u

usage() {
    echo "usage: $0 [-B builddir] [-n \"2 4\"] [-s \"small large\"] [-a \"halo em3d dht\"] [-r reps] [-b shm|ofi] [-o outdir]" >&2
    exit 2
}

src=$(cd "$(dirname "$0")/.." && pwd)
build=""
nps="2 4"
sizes="small large"
apps="halo em3d dht"
reps=5
btl=shm
out=apps-results
while getopts "B:n:s:a:r:b:o:h" opt; do
    case $opt in
    B) build=$OPTARG ;;
    n) nps=$OPTARG ;;
    s) sizes=$OPTARG ;;
    a) apps=$OPTARG ;;
    r) reps=$OPTARG ;;
    b) btl=$OPTARG ;;
    o) out=$OPTARG ;;
    *) usage ;;
    esac
done
shift $((OPTIND - 1))
[ $# -eq 0 ] || usage
case $btl in shm|ofi) ;; *) usage ;; esac
case $reps in ''|*[!0-9]*|0) usage ;; esac
for n in $nps; do case $n in ''|*[!0-9]*|0) usage ;; esac; done
for s in $sizes; do case $s in small|large) ;; *) usage ;; esac; done
for a in $apps; do case $a in halo|em3d|dht) ;; *) usage ;; esac; done

if [ -z "$build" ]; then
    for d in "$src/build" "$PWD"; do
        [ -f "$d/Makefile" ] && [ -f "$d/config.status" ] && { build=$d; break; }
    done
fi
if [ -z "$build" ] || [ ! -f "$build/Makefile" ]; then
    echo "apps-compare: no configured build directory; build first (./quickstart.sh demo) or give -B DIR" >&2
    exit 2
fi
build=$(cd "$build" && pwd)
variants="rpipe shmem mpi mpi_rma"
targets=""
for a in $apps; do for v in $variants; do targets="$targets examples/$a/${a}_$v"; done; done
targets="$targets oshrun/oshrun"

echo "apps-compare: building the example programs in $build"
if ! make -C "$build" -j"$(nproc 2>/dev/null || echo 2)" $targets >"$build/apps-compare-make.log" 2>&1; then
    echo "apps-compare: make failed (see $build/apps-compare-make.log)." >&2
    echo "apps-compare: the MPI variants need Open MPI (apt-get install libopenmpi-dev openmpi-bin) at configure time." >&2
    exit 1
fi
oshrun=$build/oshrun/oshrun
mpirun=$(command -v mpirun.openmpi || command -v mpirun || true)
if [ -z "$mpirun" ]; then
    echo "apps-compare: Open MPI's mpirun not found (apt-get install openmpi-bin)" >&2
    exit 1
fi
cores=$(nproc 2>/dev/null || echo 1)
# MPI on the same transport as the rmb variants. shm: vader, and osc/sm for
# RMA, since Open MPI 4.1's default osc/rdma over vader crashes in
# MPI_Compare_and_swap on one node (open-mpi/ompi#11349). ofi (tcp;ofi_rxm):
# the tcp BTL, and osc/pt2pt on top of it.
if [ "$btl" = ofi ]; then
    mpi_mca=(--mca btl tcp,self --mca osc pt2pt)
else
    mpi_mca=(--mca osc sm)
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)
raw=$out/apps-raw.log
csv=$out/apps.csv
txt=$out/apps.txt
: >"$raw"

cpu=$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo 2>/dev/null)
load0=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)
{
    echo "# apps-compare $(date -u '+%Y-%m-%d %H:%M UTC') on $(hostname): $cores cores${cpu:+, $cpu}"
    echo "# backend: $btl; MPI: $("$mpirun" --version 2>/dev/null | head -1) with ${mpi_mca[*]}; reps: $reps (median)"
    echo "# np <= $cores: every PE/rank bound to its core, rpipe waits spin; np > $cores: consecutive PEs/ranks share a core (PE r on core r*$cores/np) in every variant, rpipe waits yield at once (RMB_RPIPE_SPIN=0)"
    echo "# load average at start: $load0"
} | tee "$txt"

# The CPUs we may run on, one per word ("0-2,5" -> "0 1 2 5").
cpus=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status | tr ',' '\n' |
       awk -F- '{ for (c = $1; c <= ($2 == "" ? $1 : $2); c++) printf "%d ", c }')
# Oversubscribed MPI ranks, placed as oshrun --bind-to core places PEs:
# rank r on the (r * cores / np)-th of those CPUs.
mpi_bind='if [ "$OMPI_COMM_WORLD_SIZE" -gt '"$cores"' ]; then
    i=0 want=$((OMPI_COMM_WORLD_RANK * '"$cores"' / OMPI_COMM_WORLD_SIZE))
    for c in $APPS_CPUS; do [ $i -eq $want ] && exec taskset -c "$c" "$0" "$@"; i=$((i + 1)); done
fi
exec "$0" "$@"'

# run_one APP VARIANT NP SIZE: prints the program's result line, or FAIL.
run_one() {
    local app=$1 v=$2 np=$3 size=$4 prog=$build/examples/$1/$1_$2 line rc
    local -a env_args=()
    if [ "$v" = rpipe ] || [ "$v" = shmem ]; then
        env_args+=("RMB_BTL=$btl")
        [ "$btl" = ofi ] && env_args+=("FI_PROVIDER=${FI_PROVIDER:-tcp;ofi_rxm}")
        # The same waiting policy as Open MPI's mpirun: with no more ranks
        # than cores it binds rank r to core r and never yields;
        # oversubscribed it yields while waiting (mpi_yield_when_idle).
        # Oversubscribed, every variant is bound alike, consecutive ranks
        # on one core: unbound, the kernel's placement decided the run
        # (halo at 4 PEs on 2 cores: 0.26 ms with neighbours on one core,
        # 0.37 with every exchange crossing cores), whatever the variant.
        if [ "$np" -le "$cores" ]; then
            env_args+=("RMB_RPIPE_SPIN=${RMB_RPIPE_SPIN:-100000000}")
        else
            env_args+=("RMB_RPIPE_SPIN=${RMB_RPIPE_SPIN:-0}")
        fi
        line=$(env "${env_args[@]}" timeout 600 "$oshrun" -n "$np" --bind-to core \
               "$prog" -p "$size" 2>>"$raw")
    else
        # (with no more ranks than cores, mpirun's own binding: rank r on core r)
        local bind=()
        [ "$np" -gt "$cores" ] && bind=(--bind-to none)
        line=$(env APPS_CPUS="$cpus" timeout 600 "$mpirun" --allow-run-as-root --oversubscribe \
               "${mpi_mca[@]}" "${bind[@]}" -np "$np" sh -c "$mpi_bind" "$prog" -p "$size" \
               2>>"$raw")
    fi
    rc=$?
    echo "$app $v np=$np $size rc=$rc: $line" >>"$raw"
    if [ $rc -ne 0 ] || ! grep -q "check=PASS" <<<"$line"; then
        echo "FAIL"
    else
        grep "check=PASS" <<<"$line" | tail -1
    fi
}

median() { sort -g | awk '{a[NR] = $1} END {if (NR == 0) print "nan"; else if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }

total=0
for a in $apps; do for s in $sizes; do for n in $nps; do total=$((total + 1)); done; done; done
echo "app,size,np,variant,reps,time_s,time_s_min,inserts_per_s,speedup_vs_mpi,speedup_vs_mpi_rma,check" >"$csv"
results=$(mktemp)
trap 'rm -f "$results"' EXIT
failed=0
k=0
# Repetitions are interleaved (rpipe, shmem, mpi, mpi_rma, rpipe, ...), so
# that a change in the machine's load hits every variant alike.
for a in $apps; do
    for s in $sizes; do
        for n in $nps; do
            k=$((k + 1))
            declare -A times=() status=()
            per=""
            printf '[%d/%d] %-4s %-5s np=%-2s ' "$k" "$total" "$a" "$s" "$n"
            for ((i = 1; i <= reps; i++)); do
                for v in $variants; do
                    line=$(run_one "$a" "$v" "$n" "$s")
                    if [ "$line" = FAIL ]; then
                        status[$v]=FAIL
                        printf 'x'
                        continue
                    fi
                    times[$v]="${times[$v]:-} $(sed -n 's/.*time_s=\([0-9.e+-]*\).*/\1/p' <<<"$line")"
                    per=$(sed -n 's/.* inserts=\([0-9]*\).*/\1/p' <<<"$line")
                    printf '.'
                done
            done
            for v in $variants; do
                if [ -z "${times[$v]:-}" ]; then
                    med=nan; tmin=nan
                else
                    med=$(tr ' ' '\n' <<<"${times[$v]}" | grep . | median)
                    tmin=$(tr ' ' '\n' <<<"${times[$v]}" | grep . | sort -g | head -1)
                fi
                st=${status[$v]:-PASS}
                [ "$st" = FAIL ] && failed=$((failed + 1))
                inserts=""
                if [ "$a" = dht ] && [ "$med" != nan ]; then
                    inserts=$(awk -v n="$n" -v i="$per" -v t="$med" 'BEGIN {printf "%.0f", n * i / t}')
                fi
                printf ' %s %s%s' "$v" "$med" "$([ "$st" = FAIL ] && echo ' FAIL')"
                echo "$a $s $n $v $med $tmin ${inserts:--} $st" >>"$results"
            done
            printf '\n'
            unset times status
        done
    done
done
load1=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)

# Table and CSV: speedup = time(MPI variant) / time(this variant).
awk -v reps="$reps" -v csv="$csv" '
    { key = $1 " " $2 " " $3; t[key, $4] = $5; tmin[key, $4] = $6; ins[key, $4] = $7; chk[key, $4] = $8
      if (!(key in seen)) { seen[key] = 1; order[++nk] = key } }
    function ratio(a, b) { return (a == "nan" || b == "nan" || a + 0 == 0) ? "-" : sprintf("%.2f", b / a) }
    END {
        split("rpipe shmem mpi mpi_rma", vs, " ")
        printf "%-5s %-6s %3s  %-8s %12s %8s %10s %14s  %s\n", "app", "size", "np", "variant", "time (s)", "vs MPI", "vs MPI-RMA", "inserts/s", "check"
        for (i = 1; i <= nk; i++) {
            key = order[i]; split(key, f, " ")
            for (j = 1; j <= 4; j++) {
                v = vs[j]
                if (!((key, v) in t)) continue
                sm = ratio(t[key, v], t[key, "mpi"]); sr = ratio(t[key, v], t[key, "mpi_rma"])
                printf "%-5s %-6s %3s  %-8s %12s %8s %10s %14s  %s\n", f[1], f[2], f[3], v, t[key, v], sm, sr, ins[key, v], chk[key, v]
                printf "%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s\n", f[1], f[2], f[3], v, reps, t[key, v], tmin[key, v], (ins[key, v] == "-" ? "" : ins[key, v]), (sm == "-" ? "" : sm), (sr == "-" ? "" : sr), chk[key, v] >> csv
            }
        }
    }' "$results" | tee -a "$txt"
echo "# load average at end: $load1" | tee -a "$txt"

# Plot: per app, speedup over MPI-3 RMA of each variant, per size and PE count.
png=$out/apps.png
if command -v gnuplot >/dev/null 2>&1; then
    for a in $apps; do
        awk -F, -v app="$a" 'NR > 1 && $1 == app {
                key = $2 " np=" $3; if (!(key in seen)) { seen[key] = 1; order[++n] = key }
                s[key, $4] = ($10 == "" ? "NaN" : $10) }
            END { for (i = 1; i <= n; i++) { k = order[i]
                      printf "\"%s\" %s %s %s %s\n", k, s[k, "rpipe"], s[k, "shmem"], s[k, "mpi"], s[k, "mpi_rma"] } }' \
            "$csv" >"$out/apps-$a.dat"
    done
    {
        echo "set terminal pngcairo size 1500,560 font 'sans,10'"
        echo "set output '$png'"
        echo "set multiplot layout 1,$(wc -w <<<"$apps") title 'rmb application study: speedup over MPI-3 RMA (higher is better; $cores cores, $btl)'"
        echo "set style data histograms; set style histogram clustered gap 1; set style fill solid 0.85 border -1"
        echo "set boxwidth 0.9; set grid ytics; set yrange [0:*]; set offsets 0, 0, graph 0.08, 0; set xtics scale 0"
        echo "set key outside bottom center horizontal"
        for a in $apps; do
            goal=1.2; label="time"; [ "$a" = dht ] && goal=2 && label="inserts/s"
            echo "set title '$a ($label)'"
            echo "plot '$out/apps-$a.dat' using 2:xtic(1) title 'rpipe' lc rgb '#1b9e77', '' using 3 title 'OpenSHMEM' lc rgb '#7570b3', '' using 4 title 'MPI two-sided' lc rgb '#d95f02', '' using 5 title 'MPI-3 RMA' lc rgb '#999999', $goal with lines dt 2 lc rgb 'black' title 'goal (rpipe)'"
        done
        echo "unset multiplot"
    } >"$out/apps.gp"
    if gnuplot "$out/apps.gp" 2>>"$raw"; then
        echo "apps-compare: plot: $png"
    else
        echo "apps-compare: gnuplot failed (see $raw); the CSV is complete"
    fi
else
    echo "apps-compare: gnuplot not found, no plot written (apt-get install gnuplot-nox); the CSV is complete"
fi
echo "apps-compare: table: $txt"
echo "apps-compare: CSV:   $csv"
echo "apps-compare: raw program output: $raw"
if [ "$failed" -gt 0 ]; then
    echo "apps-compare: $failed configuration(s) had a failed or unverified run (see $raw)" >&2
    exit 1
fi
exit 0
