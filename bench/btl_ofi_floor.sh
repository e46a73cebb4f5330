#!/bin/sh
# btl/ofi against its provider's floor, measured in the same run: rounds
# alternate fi_pingpong (the provider's own message round trip, both sides
# polling) and btl_bench (PE 1 polling in btl_flag_wait), then print the
# median of each. Run from a build directory:
#
#   ../bench/btl_ofi_floor.sh [PROVIDER [ROUNDS [ITERATIONS]]]
#
# fi_pingpong reports µs per transfer, half a round trip: RTT = 2 × that.
set -eu

prov=${1:-tcp;ofi_rxm}
rounds=${2:-5}
iters=${3:-2000}
port=$((20000 + $$ % 20000))
out=$(mktemp -d "${TMPDIR:-/tmp}/btl_ofi_floor.XXXXXX")
trap 'rm -rf "$out"' EXIT INT TERM

command -v fi_pingpong >/dev/null || { echo "btl_ofi_floor: fi_pingpong not found (apt-get install libfabric-bin)" >&2; exit 2; }
[ -x ./oshrun/oshrun ] && [ -x ./bench/btl_bench ] || { echo "btl_ofi_floor: run from a build directory" >&2; exit 2; }

median() { sort -g | awk '{v[NR] = $1} END {if (NR) print v[int((NR + 1) / 2)]}'; }

echo "# provider $prov, $rounds rounds, $iters iterations; load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# round  pingpong_rtt_us  put_quiet_us  get_us  amo_fadd_us  put_us  load1"
r=1
while [ "$r" -le "$rounds" ]; do
    p=$((port + r))
    FI_SOCKETS_PE_WAITTIME=0 timeout 60 fi_pingpong -p "$prov" -e rdm -I "$iters" -S 8 -B "$p" >/dev/null 2>&1 &
    srv=$!
    sleep 0.5
    xfer=$(FI_SOCKETS_PE_WAITTIME=0 timeout 60 fi_pingpong -p "$prov" -e rdm -I "$iters" -S 8 -P "$p" 127.0.0.1 2>/dev/null |
           awk '$1 == 8 {print $7}')
    wait "$srv" || true
    rtt=$(awk -v x="${xfer:-nan}" 'BEGIN {printf "%.1f", 2 * x}')
    BTL_BENCH_ONLY=ofi RMB_BTL=ofi FI_PROVIDER="$prov" timeout 300 \
        ./oshrun/oshrun -n 2 ./bench/btl_bench "$iters" >"$out/bench" 2>&1 || true
    pick() { awk -v op="$1" '$0 ~ "^ofi  " op " " && $(NF-2) == 8 {printf "%.1f", $(NF-1) / 1000}' "$out/bench"; }
    pq=$(pick 'put\+quiet'); g=$(pick 'get'); fa=$(pick 'amo fetch-add'); pu=$(pick 'put \(ops table\)')
    echo "$r $rtt $pq $g $fa $pu $(cut -d' ' -f1 /proc/loadavg)" | tee -a "$out/rows"
    r=$((r + 1))
done
col() { awk -v c="$1" '{print $c}' "$out/rows" | median; }
rtt=$(col 2); pq=$(col 3); g=$(col 4); fa=$(col 5); pu=$(col 6)
echo "median   pingpong_rtt $rtt us  put+quiet $pq us  get $g us  amo fetch-add $fa us  put $pu us"
awk -v a="$pq" -v b="$rtt" -v g="$g" -v f="$fa" 'BEGIN {
    printf "ratio to the round trip: put+quiet %.2f  get %.2f  amo fetch-add %.2f (goal put+quiet <= 1.1)\n",
           a / b, g / b, f / b }'
