#!/bin/sh
# bench/byzantine.sh - final test accuracy of the MLP on Fashion-MNIST after
# one epoch under Byzantine attacks, with what each rule excluded; tables
# and heat maps.  Two parts:
#   functions  every aggregation rule x every attack x f in {0, 10%, 25%}
#              of the functions malicious (spirt-train --byzantine, within
#              one peer)
#   peers      every rule across peers x every attack x f in {0, 25%}: 4
#              peers of 5 functions on this machine (store paths), peer 3
#              Byzantine (spirt-train --byzantine peer:ATTACK), the
#              exchange's rule spirt-train --peer-rule
#   sh bench/byzantine.sh                 (after make all; about 2 hours)
#   BYZ_QUICK=1 sh bench/byzantine.sh     (a few minutes: 20 steps, fewer
#                                          rules and attacks)
#
# Environment:
#   BYZ_PARTS="..."  functions peers (default both)
#   BYZ_QUICK=1      the short form: BYZ_STEPS=20 and a smaller grid
#   BYZ_N=n          functions per step in all (default 20: f = 2 and 5
#                    within a peer; 4 peers of n/4 across)
#   BYZ_STEPS=n      stop each run after n steps (default 0: one epoch)
#   BYZ_RULES="..."  within a peer: rule names, a subset of those below
#   BYZ_XRULES="..." across peers: rule names, a subset of those below
#   BYZ_ATTACKS="..."  attacks (default: signflip:10 gauss:100 scale:-100
#                    alie ipm:0.1 labelflip); across peers also
#                    equivocate (BYZ_XATTACKS)
#   BYZ_TAU=t        cclip's radius within a peer (default 5: honest MLP
#                    gradients of 32 samples lie about 3 from the previous
#                    aggregate)
#   BYZ_MTAU=t       cclip's radius on worker momenta (default 2; that
#                    row trains with SGD, lr 0.3, as the paper does: with
#                    Adam on top, worker momentum lost 25 points even
#                    clean, docs/byzantine.md)
#   BYZ_TIMEOUT=s    a run that takes longer is stopped and shows as "-"
#                    (default 1800)
#   BYZ_OUT=dir      results (default bench/out/byzantine): results.tsv,
#                    table.md, heatmap.png (functions); peers.tsv,
#                    peers-table.md, heatmap-peers.png (peers)
#
# Within a peer the defender knows only the 25% bound: trim cuts 25% per
# side, Krum and multi-Krum are told f = 25% of n.  The malicious
# functions are 0..f-1 (the shuffle of bucketing and the shards do not
# favour any).  Exclusions are read from agg/<t>/excluded of the last two
# steps of each run (-P in spirt-train keeps those): per run, the share of
# malicious inputs excluded (tp) and of honest ones (fp).
#
# Across peers the Byzantine peer is p3; its attack acts on its aggregate
# (spirt-attack -a), labelflip on all its functions, and equivocate sends
# its honest aggregate to p0 and p1 and ten times the opposite to p2
# (p2's peers file names p3's other store).  The accuracy is the worst of
# the honest peers' (they hold one model, except under scclip); tp is the
# share of the last two rounds that left p3 out or excluded it (gagg/<t>/
# round and excluded), fp the share of honest aggregates excluded.
set -eu
cd "$(dirname "$0")/.."
. bench/cpu.sh
PATH="$PWD:$PATH"
FMNIST=${FMNIST:-/usr/share/datasets/fashion-mnist}
export PATH
unset SPIRT_STORE SPIRT_SYNC SPIRT_AGG_RULE SPIRT_KEY SPIRT_ID SPIRT_RUN \
    SPIRT_TOKEN SPIRT_GROUP SPIRT_ALLOW
quick=${BYZ_QUICK:-0}
n=${BYZ_N:-20} tau=${BYZ_TAU:-5} mtau=${BYZ_MTAU:-2}
tmo=${BYZ_TIMEOUT:-1800}
steps=${BYZ_STEPS:-0}
[ "$quick" -eq 0 ] || steps=${BYZ_STEPS:-20}
parts=${BYZ_PARTS:-"functions peers"}
out=${BYZ_OUT:-bench/out/byzantine}
attacks=${BYZ_ATTACKS:-"signflip:10 gauss:100 scale:-100 alie ipm:0.1 labelflip"}
xattacks=${BYZ_XATTACKS:-"$attacks equivocate"}
if [ "$quick" -ne 0 ]; then
	attacks=${BYZ_ATTACKS:-"signflip:10 alie labelflip"}
	xattacks=${BYZ_XATTACKS:-"signflip:10 alie labelflip equivocate"}
fi
f10=$(( (n + 5) / 10 )) f25=$(( n / 4 ))
np=4 m=$((n / 4))
# name|spirt-train options
allrules="mean|-a mean
trim|-a trim:0.25
median|-a median
norm|-a norm
krum|-a krum:$f25
mkrum|-a mkrum:$f25:$((n - f25))
cclip|-a cclip:$tau
cclip-mom|-a cclip:$mtau --worker-momentum 0.9 -o sgd -l 0.3
bucket2-median|--bucket 2 -a median
bucket2-cclip|--bucket 2 -a cclip:$tau"
# across peers (trim: the median of 4; no Krum with 4 peers: W > 2f+2)
allxrules="mean|--peer-rule mean
median|--peer-rule median
norm|--peer-rule norm
cclip|--peer-rule cclip:auto
scclip|--peer-rule scclip:auto"
rules=${BYZ_RULES:-$(printf '%s\n' "$allrules" | cut -d'|' -f1)}
xrules=${BYZ_XRULES:-$(printf '%s\n' "$allxrules" | cut -d'|' -f1)}
if [ "$quick" -ne 0 ]; then
	rules=${BYZ_RULES:-"mean norm cclip-mom"}
	xrules=${BYZ_XRULES:-"mean median norm scclip"}
fi

bench_header bench/byzantine
echo "MLP on Fashion-MNIST, $n functions x batch 32, $([ "$steps" -gt 0 ] &&
    echo "$steps steps" || echo "1 epoch"); parts: $parts"

mkdir -p "$out"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/spirt-byz.XXXXXX")
pids=
# (a run's spirt-train is under timeout, in a process group of its own)
trap 'for p in $pids; do kill -TERM "$p" 2>/dev/null; done; rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM
# the data once: each run starts from a copy of this store (within a
# peer: n functions; across: 4 peers of n/4, the same n shards)
spirt-shard -q -s "$tmp/base.db" -n "$n" --seed 1 \
    "$FMNIST/train-images-idx3-ubyte.gz" "$FMNIST/train-labels-idx1-ubyte.gz"
spirt-shard -q -s "$tmp/base.db" -d test \
    "$FMNIST/t10k-images-idx3-ubyte.gz" "$FMNIST/t10k-labels-idx1-ubyte.gz"

# excluded STORE ROOT T: the origins ROOT/T/excluded lists, comma
# separated, "-" for none
excluded() {
	spirt-store -s "$1" export "$2/$3/excluded" - |
	    /usr/bin/python3 -c 'import io, sys, numpy as np
a = np.load(io.BytesIO(sys.stdin.buffer.read())).reshape(-1, 2)
print(",".join(str(int(o)) for o in a[:, 0]) or "-")'
}

# lastacc LOG: the last test accuracy of a spirt-train log
lastacc() {
	awk -F'\t' 'NR > 1 && $6 != "-" { a = $6 } END { print a }' "$1"
}

elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.0f", b - a }'; }

# ---- within a peer ----
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
	if ! timeout "$tmo" spirt-train -q -s "$db" -n "$n" -e 1 ${steps:+--steps $steps} \
	    $opts $byz 2>"$tmp/err"; then
		printf '%s\t%s\t%s\t-\t-\t-\t-\n' "$1" "$2" "$3" >>"$res"
		sed 's/^/  /' "$tmp/err" >&2
		return 0
	fi
	t1=$(date +%s.%N)
	acc=$(lastacc "$db.train-mlp.tsv")
	# exclusions of the last two steps: rows (origin, reason)
	last=$(spirt-store -s "$db" ls agg/ | cut -f1 |
	    sed -n 's,^agg/\([0-9]*\)/excluded$,\1,p' | sort -n | tail -n 2)
	ex=
	for t in $last; do
		ex="$ex $(excluded "$db" agg "$t")"
	done
	printf '%s\n' "$ex" | awk -v f="$3" -v n="$n" -v r="$1" -v a="$2" \
	    -v acc="$acc" -v s="$(elapsed "$t0" "$t1")" '{
		k = 0; tp = 0; fp = 0
		for (i = 1; i <= NF; i++) {
			k++
			if ($i == "-") continue
			m = split($i, o, ",")
			for (j = 1; j <= m; j++)
				if (o[j] < f) tp++; else fp++
		}
		printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r, a, f, acc,
		    f ? sprintf("%.2f", tp / (f * k)) : "-",
		    sprintf("%.2f", fp / ((n - f) * k)), s
	}' >>"$res"
	tail -n 1 "$res" | awk -F'\t' '{ printf "%-15s %-12s f=%-2s acc %s  excluded: malicious %s honest %s  (%ss)\n", $1, $2, $3, $4, $5, $6, $7 }'
}

# ---- across peers: 4 peers of m functions, p3 Byzantine ----
# keys once; peers: their stores by path; peers2: p2 sees p3's other
# story (spirt-train --byzantine peer:equivocate:A serves it from
# STORE.fork)
xsetup() {
	: >"$tmp/peers"
	for i in 0 1 2 3; do
		spirt-key keygen -f "$tmp/p$i.key" >/dev/null
		echo "p$i $tmp/x$i.db" >>"$tmp/peers"
	done
	sed "s,$tmp/x3.db\$,$tmp/x3.db.fork," "$tmp/peers" >"$tmp/peers2"
}

# xone RULE ATTACK F: 4 peers train (F = 1: p3 with ATTACK), then the
# honest peers' worst accuracy and what the last two rounds did with p3
xone() {
	opts=$(printf '%s\n' "$allxrules" | sed -n "s/^$1|//p")
	[ -n "$opts" ] || { echo "bench/byzantine: unknown peer rule $1" >&2; return 1; }
	pids= fail=0
	for i in 0 1 2 3; do
		rm -rf "$tmp/x$i.db" "$tmp/x$i.db".*
		cp -R "$tmp/base.db" "$tmp/x$i.db"
	done
	t0=$(date +%s.%N)
	for i in 0 1 2 3; do
		byz= pf=$tmp/peers
		if [ "$3" -gt 0 ] && [ "$i" -eq 3 ]; then
			case $2 in
			equivocate) byz="--byzantine peer:equivocate:signflip:10" ;;
			*) byz="--byzantine peer:$2" ;;
			esac
		fi
		[ "$2" != equivocate ] || [ "$3" -eq 0 ] || [ "$i" -ne 2 ] ||
			pf=$tmp/peers2
		# shellcheck disable=SC2086
		SPIRT_KEY=$tmp/p$i.key SPIRT_ID=p$i SPIRT_RUN=bench \
		    timeout "$tmo" spirt-train -q -s "$tmp/x$i.db" -n "$m" -e 1 \
		    ${steps:+--steps $steps} --peers "$pf" --peer "$i" \
		    --deadline 60000 $opts $byz 2>"$tmp/xerr$i" >/dev/null &
		pids="$pids $!"
	done
	for p in $pids; do wait "$p" || fail=1; done
	pids=
	t1=$(date +%s.%N)
	# the honest peers must finish (the Byzantine one goes on whatever)
	if [ "$fail" -ne 0 ] && ! { [ -s "$tmp/x0.db.train-mlp.tsv" ] &&
	    [ -s "$tmp/x1.db.train-mlp.tsv" ] && [ -s "$tmp/x2.db.train-mlp.tsv" ]; }; then
		printf '%s\t%s\t%s\t-\t-\t-\t-\t-\t-\n' "$1" "$2" "$3" >>"$xres"
		sed 's/^/  /' "$tmp"/xerr* >&2
		return 0
	fi
	accs=$(for i in 0 1 2; do lastacc "$tmp/x$i.db.train-mlp.tsv"; done |
	    tr '\n' ' ')
	same=$(for i in 0 1 2; do
		spirt-store -s "$tmp/x$i.db" get "model/mlp@$(spirt-store -s \
		    "$tmp/x$i.db" ls model/mlp@ | cut -f1 | sed 's/.*@//' |
		    sort -n | tail -n 1)" | md5sum
	done | sort -u | wc -l)
	# the last two rounds, as p0 saw them: p3 left out or excluded
	last=$(spirt-store -s "$tmp/x0.db" ls gagg/ | cut -f1 |
	    sed -n 's,^gagg/\([0-9]*\)/round$,\1,p' | sort -n | tail -n 2)
	k=0 tp=0 fp=0
	for t in $last; do
		k=$((k + 1))
		ex=$(excluded "$tmp/x0.db" gagg "$t")
		left=$(spirt-store -s "$tmp/x0.db" get "gagg/$t/round" |
		    tr -c '[:print:]\n' ' ' | grep -c '^peer=p3 [^u]' || :)
		# the combine's origins are the places in peer id order of
		# the aggregates it had: p3 is the last when it was there
		used=$(spirt-store -s "$tmp/x0.db" get "gagg/$t/round" |
		    tr -c '[:print:]\n' ' ' | grep -c '^peer=p[0-9]* \(used\|self\)' || :)
		if [ "$left" -gt 0 ]; then
			tp=$((tp + 1))
		fi
		for o in $(printf '%s\n' "$ex" | tr ',' ' '); do
			[ "$o" = - ] && continue
			if [ "$left" -eq 0 ] && [ "$o" -eq $((used - 1)) ]; then
				tp=$((tp + 1))
			else
				fp=$((fp + 1))
			fi
		done
	done
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" \
	    "$(printf '%s\n' $accs | sort -n | head -n 1)" \
	    "$(awk -v f="$3" -v k="$k" -v tp="$tp" 'BEGIN { if (f) printf "%.2f", tp / k; else print "-" }')" \
	    "$(awk -v k="$k" -v fp="$fp" 'BEGIN { printf "%.2f", fp / (3 * k) }')" \
	    "$(elapsed "$t0" "$t1")" "$(echo $accs | tr ' ' ',')" "$same" >>"$xres"
	tail -n 1 "$xres" | awk -F'\t' '{ printf "peers %-8s %-12s f=%-2s acc %s (honest %s, %s model(s))  p3 out: %s  honest out: %s  (%ss)\n", $1, $2, $3, $4, $8, $9, $5, $6, $7 }'
}

# ---- tables (markdown) and heat maps (gnuplot, as spirt-train) ----
# table RES COLS: the markdown table of RES, columns COLS (attack@f)
table() {
	awk -F'\t' -v cols="$2" '
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
}' "$1"
}

# heatmap RES COLS PNG TITLE
heatmap() {
	awk -F'\t' -v cols="$2" -v rows="$tmp/rows" '
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
	printf "" > rows
	for (k = 1; k <= nr; k++) print order[k] > rows
}' "$1" >"$tmp/matrix"
	command -v gnuplot >/dev/null 2>&1 || return 0
	xt=$(printf '%s\n' $2 | awk '{ printf "%s\"%s\" %d", (NR > 1 ? ", " : ""), $0, NR - 1 }')
	yt=$(awk '{ printf "%s\"%s\" %d", (NR > 1 ? ", " : ""), $0, NR - 1 }' "$tmp/rows")
	gnuplot <<GP || echo "bench/byzantine: gnuplot failed" >&2
set terminal pngcairo size 1200,520 noenhanced
set output "$3"
set title "$4"
set xtics ($xt) rotate by 45 right
set ytics ($yt)
set yrange [*:*] reverse
set cbrange [0:100]
set palette defined (0 "#b2182b", 50 "#fddbc7", 80 "#d1e5f0", 100 "#2166ac")
set datafile missing "NaN"
plot "$tmp/matrix" matrix with image notitle, \
     "$tmp/matrix" matrix using 1:2:(sprintf("%.0f", \$3)) with labels font ",9" notitle
GP
	echo "heat map: $3"
}

res=$out/results.tsv xres=$out/peers.tsv
for part in $parts; do
	case $part in
	functions)
		printf 'rule\tattack\tf\taccuracy\ttp\tfp\tseconds\n' >"$res"
		for r in $rules; do
			one "$r" none 0
			for a in $attacks; do
				for f in $f10 $f25; do
					one "$r" "$a" "$f"
				done
			done
		done
		cols="clean"
		for a in $attacks; do cols="$cols $a@$f10 $a@$f25"; done
		table "$res" "$cols" >"$out/table.md"
		echo
		echo "within a peer: test accuracy (%), columns attack@f (f of $n malicious):"
		cat "$out/table.md"
		heatmap "$res" "$cols" "$out/heatmap.png" \
		    "spirt: MLP test accuracy (%) on Fashion-MNIST after 1 epoch, $n functions, attack@f malicious"
		;;
	peers)
		xsetup
		printf 'rule\tattack\tf\taccuracy\ttp\tfp\tseconds\thonest\tmodels\n' >"$xres"
		for r in $xrules; do
			xone "$r" none 0
			for a in $xattacks; do
				xone "$r" "$a" 1
			done
		done
		cols="clean"
		for a in $xattacks; do cols="$cols $a@1"; done
		table "$xres" "$cols" >"$out/peers-table.md"
		echo
		echo "across peers: test accuracy (%) of the worst honest peer, columns attack@f (f of 4 peers Byzantine):"
		cat "$out/peers-table.md"
		heatmap "$xres" "$cols" "$out/heatmap-peers.png" \
		    "spirt: MLP test accuracy (%) on Fashion-MNIST after 1 epoch, 4 peers x $m functions, peer 3 Byzantine with attack@1"
		;;
	*) echo "bench/byzantine: unknown part $part (functions, peers)" >&2; exit 64 ;;
	esac
done
