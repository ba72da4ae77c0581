#!/bin/sh
# bench/byzantine.sh - final test accuracy of the MLP on Fashion-MNIST after
# one epoch, every aggregation rule x every attack x f in {0, 10%, 25%} of
# the functions malicious (spirt-train --byzantine, within one peer), with
# what each rule excluded; a table and a heat map.
#   sh bench/byzantine.sh                 (after make all)
#
# Environment:
#   BYZ_N=n          functions per step (default 20: f = 2 and 5)
#   BYZ_STEPS=n      stop each run after n steps (default 0: one epoch);
#                    a quick sanity run: BYZ_STEPS=20
#   BYZ_RULES="..."  rule names, a subset of those below (default all)
#   BYZ_ATTACKS="..."  attacks (default: signflip:10 gauss:100 scale:-100
#                    alie ipm:0.1 labelflip)
#   BYZ_TAU=t        cclip's radius (default 5: honest MLP gradients of
#                    32 samples lie about 3 from the previous aggregate)
#   BYZ_OUT=dir      results (default bench/out/byzantine): results.tsv,
#                    table.md, heatmap.png
#
# The defender knows only the 25% bound: trim cuts 25% per side, Krum and
# multi-Krum are told f = 25% of n.  The malicious functions are 0..f-1
# (the shuffle of bucketing and the shards do not favour any).  Exclusions
# are read from agg/<t>/excluded of the last two steps of each run (-P in
# spirt-train keeps those): per run, the share of malicious inputs
# excluded (tp) and of honest ones (fp).
set -eu
cd "$(dirname "$0")/.."
. bench/cpu.sh
PATH="$PWD:$PATH"
FMNIST=${FMNIST:-/usr/share/datasets/fashion-mnist}
export PATH
unset SPIRT_STORE SPIRT_SYNC SPIRT_AGG_RULE
n=${BYZ_N:-20} steps=${BYZ_STEPS:-0} tau=${BYZ_TAU:-5}
out=${BYZ_OUT:-bench/out/byzantine}
attacks=${BYZ_ATTACKS:-"signflip:10 gauss:100 scale:-100 alie ipm:0.1 labelflip"}
f10=$(( (n + 5) / 10 )) f25=$(( n / 4 ))
# name|spirt-train options
allrules="mean|-a mean
trim|-a trim:0.25
median|-a median
norm|-a norm
krum|-a krum:$f25
mkrum|-a mkrum:$f25:$((n - f25))
cclip|-a cclip:$tau
bucket2-median|--bucket 2 -a median
bucket2-cclip|--bucket 2 -a cclip:$tau"
rules=${BYZ_RULES:-$(printf '%s\n' "$allrules" | cut -d'|' -f1)}

bench_header bench/byzantine
echo "MLP on Fashion-MNIST, $n functions x batch 32, $([ "$steps" -gt 0 ] &&
    echo "$steps steps" || echo "1 epoch"), f = 0, $f10, $f25 malicious"

mkdir -p "$out"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/spirt-byz.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# the data once: each run starts from a copy of this store
spirt-shard -q -s "$tmp/base.db" -n "$n" --seed 1 \
    "$FMNIST/train-images-idx3-ubyte.gz" "$FMNIST/train-labels-idx1-ubyte.gz"
spirt-shard -q -s "$tmp/base.db" -d test \
    "$FMNIST/t10k-images-idx3-ubyte.gz" "$FMNIST/t10k-labels-idx1-ubyte.gz"

res=$out/results.tsv
printf 'rule\tattack\tf\taccuracy\ttp\tfp\tseconds\n' >"$res"

# one RULE ATTACK F: train, then the accuracy and the exclusions
one() {
	opts=$(printf '%s\n' "$allrules" | sed -n "s/^$1|//p")
	[ -n "$opts" ] || { echo "bench/byzantine: unknown rule $1" >&2; return 1; }
	db=$tmp/run.db
	rm -rf "$db" "$db".train-*
	cp -R "$tmp/base.db" "$db"
	byz=
	if [ "$3" -gt 0 ]; then
		byz="--byzantine $(seq -s, 0 $(($3 - 1))):$2"
	fi
	t0=$(date +%s.%N)
	# shellcheck disable=SC2086
	if ! spirt-train -q -s "$db" -n "$n" -e 1 ${steps:+--steps $steps} \
	    $opts $byz 2>"$tmp/err"; then
		printf '%s\t%s\t%s\t-\t-\t-\t-\n' "$1" "$2" "$3" >>"$res"
		sed 's/^/  /' "$tmp/err" >&2
		return 0
	fi
	t1=$(date +%s.%N)
	acc=$(awk -F'\t' 'NR > 1 && $6 != "-" { a = $6 } END { print a }' \
	    "$db.train-mlp.tsv")
	# exclusions of the last two steps: rows (origin, reason)
	last=$(spirt-store -s "$db" ls agg/ | cut -f1 |
	    sed -n 's,^agg/\([0-9]*\)/excluded$,\1,p' | sort -n | tail -n 2)
	ex=
	for t in $last; do
		ex="$ex $(spirt-store -s "$db" export agg/$t/excluded - |
		    /usr/bin/python3 -c 'import io, sys, numpy as np
a = np.load(io.BytesIO(sys.stdin.buffer.read())).reshape(-1, 2)
print(",".join(str(int(o)) for o in a[:, 0]) or "-")')"
	done
	printf '%s\n' "$ex" | awk -v f="$3" -v n="$n" -v r="$1" -v a="$2" \
	    -v acc="$acc" -v s="$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" '{
		k = 0; tp = 0; fp = 0
		for (i = 1; i <= NF; i++) {
			k++
			if ($i == "-") continue
			m = split($i, o, ",")
			for (j = 1; j <= m; j++)
				if (o[j] < f) tp++; else fp++
		}
		printf "%s\t%s\t%s\t%s\t%s\t%s\t%.0f\n", r, a, f, acc,
		    f ? sprintf("%.2f", tp / (f * k)) : "-",
		    sprintf("%.2f", fp / ((n - f) * k)), s
	}' >>"$res"
	tail -n 1 "$res" | awk -F'\t' '{ printf "%-15s %-12s f=%-2s acc %s  excluded: malicious %s honest %s  (%ss)\n", $1, $2, $3, $4, $5, $6, $7 }'
}

for r in $rules; do
	one "$r" none 0
	for a in $attacks; do
		for f in $f10 $f25; do
			one "$r" "$a" "$f"
		done
	done
done

# ---- the table (markdown) and the heat map (gnuplot, as spirt-train) ----
cols="clean"
for a in $attacks; do cols="$cols $a@$f10 $a@$f25"; done
awk -F'\t' -v cols="$cols" -v f10="$f10" -v f25="$f25" '
NR == 1 { next }
{ key = $3 == 0 ? "clean" : $2 "@" $3; acc[$1, key] = $4
  if (!($1 in seen)) { seen[$1] = 1; order[++nr] = $1 } }
END {
	nc = split(cols, c, " ")
	printf "| rule |"; for (i = 1; i <= nc; i++) printf " %s |", c[i]; print ""
	printf "|---|"; for (i = 1; i <= nc; i++) printf "---:|"; print ""
	for (k = 1; k <= nr; k++) {
		printf "| %s |", order[k]
		for (i = 1; i <= nc; i++) {
			v = acc[order[k], c[i]]
			printf " %s |", v == "" || v == "-" ? "-" : sprintf("%.1f", 100 * v)
		}
		print ""
	}
}' "$res" >"$out/table.md"
echo
echo "test accuracy (%), columns attack@f (f of $n malicious):"
cat "$out/table.md"

# matrix for gnuplot: one row per rule, one column per attack@f
awk -F'\t' -v cols="$cols" '
NR == 1 { next }
{ key = $3 == 0 ? "clean" : $2 "@" $3; acc[$1, key] = $4
  if (!($1 in seen)) { seen[$1] = 1; order[++nr] = $1 } }
END {
	nc = split(cols, c, " ")
	for (k = 1; k <= nr; k++) {
		for (i = 1; i <= nc; i++) {
			v = acc[order[k], c[i]]
			printf "%s%s", (i > 1 ? " " : ""), (v == "" || v == "-" ? "NaN" : 100 * v)
		}
		print ""
	}
	for (k = 1; k <= nr; k++) print order[k] > "'"$tmp/rows"'"
}' "$res" >"$tmp/matrix"
if command -v gnuplot >/dev/null 2>&1; then
	xt=$(printf '%s\n' $cols | awk '{ printf "%s\"%s\" %d", (NR > 1 ? ", " : ""), $0, NR - 1 }')
	yt=$(awk '{ printf "%s\"%s\" %d", (NR > 1 ? ", " : ""), $0, NR - 1 }' "$tmp/rows")
	gnuplot <<GP || echo "bench/byzantine: gnuplot failed" >&2
set terminal pngcairo size 1200,520 noenhanced
set output "$out/heatmap.png"
set title "spirt: MLP test accuracy (%) on Fashion-MNIST after 1 epoch, $n functions, attack@f malicious"
set xtics ($xt) rotate by 45 right
set ytics ($yt)
set yrange [*:*] reverse
set cbrange [0:100]
set palette defined (0 "#b2182b", 50 "#fddbc7", 80 "#d1e5f0", 100 "#2166ac")
set datafile missing "NaN"
plot "$tmp/matrix" matrix with image notitle, \
     "$tmp/matrix" matrix using 1:2:(sprintf("%.0f", \$3)) with labels font ",9" notitle
GP
	echo "heat map: $out/heatmap.png"
fi
