#!/bin/sh
# your-function: spirt-train with a gradient function of your own, a
# Python one (softmax_fn.py, NumPy only) in spirt-grad's place, warm and
# --cold, on a small synthetic table; spirt-grad's run beside it for
# comparison.  The contract the function keeps is spirt-function(7).
#
#   sh run.sh [workdir]      STEPS=n (default 20), PYTHON=python3
set -eu
here=$(cd "$(dirname "$0")" && pwd)
PATH="$here/../..:$PATH"                # the tools, when run from the tree
py=${PYTHON:-python3}
steps=${STEPS:-20}
work=${1:-$(mktemp -d)}
mkdir -p "$work" && cd "$work"

# 1. the data: 3 classes of 100 points in 4 dimensions, class k centred
#    on 2 e_k, plus noise (a sum of 4 uniforms of Park-Miller's
#    generator, the same file on every awk); every 5th for the test set
gen_csv() {
	awk 'function u() { x = (16807 * x) % 2147483647; return x / 2147483647 }
	BEGIN {
		x = 42; print "f1,f2,f3,f4,class"
		for (i = 0; i < 300; i++) {
			k = i % 3; line = ""
			for (j = 0; j < 4; j++)
				line = line sprintf("%.5f,", (j == k) * 2 + u() + u() + u() + u() - 2)
			print line k
		}
	}'
}
gen_csv | awk 'NR == 1 || NR % 5 != 1' >train.csv
gen_csv | awk 'NR == 1 || NR % 5 == 1' >test.csv
rm -rf base.db warm.db cold.db grad.db
# two shards for two functions, and the test set
spirt-shard -q -s base.db -f csv --label-col last -n 2 --seed 1 train.csv
spirt-shard -q -s base.db -f csv --label-col last -d test test.csv
cp -r base.db warm.db && cp -r base.db cold.db && cp -r base.db grad.db

# 2. the training, the function named by --function: its words, then
#    spirt-grad's arguments (-q --serve -m soft -w W -b 16 -S 1 warm;
#    -q -m soft -t T -w W -b 16 -S 1 cold)
train() {
	s=$1
	shift
	spirt-train -q -m soft --spec softmax:4:3 -o momentum -l 0.1 \
	    --schedule constant -n 2 -b 16 -S 1 --steps "$steps" \
	    --eval-every "$steps" -s "$s" "$@"
	awk -F'\t' -v s="$s" 'NR > 1 && $6 != "-" { a = $6 }
		END { printf "%s: test accuracy %s after '"$steps"' steps\n", s, a }' \
	    "$s.train-soft.tsv"
}
train warm.db --function "$py $here/softmax_fn.py"
train cold.db --cold --function "$py $here/softmax_fn.py"
train grad.db                           # spirt-grad, for comparison

# 3. what the function wrote: the last step's gradients, each worker's,
#    with the metadata spirt-agg checks
t=$((steps - 1))
for w in 0 1; do
	spirt-store -s cold.db show "grad/$t/$w" |
	    grep -E '^(key|shape|name|step|origin|samples|revision|loss)='
done
