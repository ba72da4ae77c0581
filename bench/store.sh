#!/bin/sh
# bench/store.sh - the store's commit, read and checksum rates
# (bench/store_bench), under the header naming the CPU.
#   sh bench/store.sh            (after make bench/store_bench)
cd "$(dirname "$0")/.." || exit 70
. bench/cpu.sh
make -s all bench/store_bench || exit 70
bench_header bench/store
exec ./bench/store_bench
