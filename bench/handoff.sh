#!/bin/sh
# bench/handoff.sh - what a warm step's hand-offs between an sh driver and
# spirt-run cost, with nothing else in the step: four functions and an
# update that answer at once (an sh read loop each), driven two ways,
# in interleaved rounds:
#   send: the driver before the fan: 4 sends, 4 answers read with a case
#         and a drop each, a send of the update and its answer;
#   fan:  one request, fan g0,g1,g2,g3 T to=slot then upd T mean=slots,
#         and one line back (spirt-run(1)).
# Prints each round's ms a step, then the medians.
#   sh bench/handoff.sh          (after make all)
# Environment: ROUNDS (default 7), STEPS a run (default 2000).
set -eu
cd "$(dirname "$0")/.."
. bench/cpu.sh
PATH="$PWD:$PATH"
export PATH
rounds=${ROUNDS:-7} steps=${STEPS:-2000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bench_header bench/handoff
cat >"$tmp/fn" <<'EOF'
#!/bin/sh
while read -r t rest; do
	if [ "$2" = u ]; then echo "step=$t lr=0.01 count=4 loss=0.5"
	else echo "step=$t worker=$1 samples=1 loss=1"; fi
done
EOF
chmod +x "$tmp/fn"

drop() {        # drop VAR X, as spirt-train's
	eval "_dl=\$$1"
	_dr=
	for _dx in $_dl; do [ "$_dx" = "$2" ] || _dr="$_dr$_dx "; done
	eval "$1=\$_dr"
}
# drive MODE: one run of $steps steps; ms a step on stdout
drive() {
	mkdir "$tmp/d"
	mkfifo "$tmp/d/rq" "$tmp/d/an"
	exec 3<>"$tmp/d/rq" 9<>"$tmp/d/an"
	spirt-run -D "$tmp/d" <"$tmp/d/rq" >"$tmp/d/an" 3>&- 9<&- &
	for x in 0 1 2 3; do echo "start g$x $tmp/fn $x g" >&3; done
	echo "start upd $tmp/fn 0 u" >&3
	t=0 a=$(spirt-run -c)
	while [ "$t" -lt "$steps" ]; do
		if [ "$1" = fan ]; then
			echo "fan g0,g1,g2,g3 $t to=slot then upd $t mean=slots" >&3
			read -r ack <&9
			case $ack in "stepped upd step=$t "*) ;; *) exit 70 ;; esac
			t=$((t + 1))
			continue
		fi
		for x in 0 1 2 3; do echo "send g$x $t to=slot" >&3; done
		p="0 1 2 3 "
		while [ -n "$p" ]; do
			read -r ack <&9
			case $ack in
			"answer g"*" step=$t worker="*)
				x=${ack#answer g}
				drop p "${x%% *}" ;;
			*) exit 70 ;;
			esac
		done
		echo "send upd $t mean=slots" >&3
		read -r ack <&9
		case $ack in "answer upd step=$t "*) ;; *) exit 70 ;; esac
		t=$((t + 1))
	done
	b=$(spirt-run -c)
	exec 3>&- 9<&-
	wait
	awk -v a="$a" -v b="$b" -v n="$steps" 'BEGIN { printf "%.4f\n", (b - a) / n }'
}
med() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

echo "4 functions and an update answering at once, $rounds rounds x $steps steps"
printf '%-6s %8s %8s\n' round send fan
r=1
while [ "$r" -le "$rounds" ]; do
	if [ $((r % 2)) -eq 1 ]; then
		s=$(drive send) f=$(drive fan)
	else
		f=$(drive fan) s=$(drive send)
	fi
	printf '%-6s %8s %8s\n' "$r" "$s" "$f" | tee -a "$tmp/rounds"
	r=$((r + 1))
done
s=$(awk '{ print $2 }' "$tmp/rounds" | med)
f=$(awk '{ print $3 }' "$tmp/rounds" | med)
awk -v s="$s" -v f="$f" 'BEGIN {
	printf "median ms a step: send %.3f, fan %.3f (%.2fx)\n", s, f, f / s }'
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
