#!/bin/sh
# bench/agg.sh - spirt-agg and spirt-update against the memory limit and
# SPIRT's Redis/Lua/JSON path, side by side in one run (make bench, or
# sh bench/agg.sh; BENCH_AGG_MAXN=n leaves out the sizes above n, for a
# quick check).  Starts a private redis-server on 127.0.0.1 (a free port,
# a temporary directory) when one is installed, and stops it after.
cd "$(dirname "$0")/.." || exit 70
. bench/cpu.sh
make -s all bench/agg_bench || exit 70
bench_header bench/agg
PATH="$PWD:$PATH"
export PATH

tmp=$(mktemp -d) || exit 71
port=
pid=
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

if command -v redis-server >/dev/null 2>&1; then
	p=$((20000 + $$ % 20000))
	while [ $p -lt 65000 ]; do
		redis-cli -p $p ping >/dev/null 2>&1 || break
		p=$((p + 1))
	done
	redis-server --port $p --bind 127.0.0.1 --dir "$tmp" --save '' \
		--appendonly no --proto-max-bulk-len 1gb \
		--lua-time-limit 0 --busy-reply-threshold 0 \
		>"$tmp/redis.log" 2>&1 &
	pid=$!
	i=0
	while [ $i -lt 50 ] && ! redis-cli -p $p ping >/dev/null 2>&1; do
		sleep 0.1
		i=$((i + 1))
	done
	if redis-cli -p $p ping >/dev/null 2>&1; then
		port=$p
		echo "redis-server $(redis-server --version | cut -d' ' -f3) on 127.0.0.1:$port"
	else
		echo "redis-server did not start; Redis columns left out" >&2
	fi
fi

# The stores go where a user keeps one: a disk file system, /var/tmp
# unless BENCH_AGG_DIR says.  Neither side syncs: Redis runs without
# persistence and spirt's gradients and aggregates live in its scratch
# environment, so both work in memory (the page cache for spirt).  The
# headline (mean, W = 8, N = 1e6) runs once more with its store on a
# tmpfs (/dev/shm), where the page cache maps file pages 4 KiB at a time.
sdir=$(mktemp -d "${BENCH_AGG_DIR:-/var/tmp}/agg_bench.XXXXXX") || exit 71
mdir=
if [ -d /dev/shm ] && [ -w /dev/shm ]; then
	mdir=$(mktemp -d /dev/shm/agg_bench.XXXXXX) || exit 71
fi
echo "stores in $sdir ($(stat -f -c %T "$sdir"))"
[ -n "$mdir" ] && echo "-m dir: $mdir ($(stat -f -c %T "$mdir"))"
TMPDIR=$sdir ./bench/agg_bench ${mdir:+-m "$mdir"} ${port:+-p "$port"} \
    ${BENCH_AGG_MAXN:+-N "$BENCH_AGG_MAXN"}
rc=$?
rm -rf "$sdir" ${mdir:+"$mdir"}
[ -n "$port" ] && redis-cli -p "$port" shutdown nosave >/dev/null 2>&1
wait "$pid" 2>/dev/null
pid=
exit $rc
