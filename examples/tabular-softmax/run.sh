#!/bin/sh
# tabular-softmax: softmax regression on a small table, with the tools
# themselves (no driver): shard, init, a shell loop of grad/agg/update,
# then eval.  The data is the Statlog heart disease set in LIBSVM format
# that Debian's liblinear-tools ships (270 patients, 13 features scaled to
# [-1, 1], label +1/-1 = disease or not); DATA=synthetic, or no such file,
# uses a generated CSV table instead (see gen_csv below).
#
#   sh run.sh [workdir]      STEPS=n (default 60), DATA=heart|synthetic
set -eu
here=$(cd "$(dirname "$0")" && pwd)
PATH="$here/../..:$PATH"                # the tools, when run from the tree
heart=${HEART:-/usr/share/doc/liblinear-tools/examples/heart_scale}
steps=${STEPS:-60}
work=${1:-$(mktemp -d)}
mkdir -p "$work" && cd "$work"
export SPIRT_STORE="$work/tabular.db"

# gen_csv: a deterministic synthetic table, 3 classes of 100 points in 4
# dimensions: class k is centred on 2 e_k (e_k the k-th unit vector),
# plus noise that is a sum of 4 uniforms minus 2 (roughly normal, sd 0.58)
# on every coordinate.  The uniforms come from the Park-Miller generator
# x = 16807 x mod (2^31 - 1), exact in awk's doubles, so every awk writes
# the same file.  The first line is a header, the label the last column.
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

# 1. the data: every 5th sample for the test set, the rest for training
if [ "${DATA:-heart}" = heart ] && [ -r "$heart" ]; then
	echo "data: $heart (LIBSVM)"
	# LIBSVM labels -1/+1 become classes 0/1; --dim pins 13 features,
	# since a sample may lack the last index
	awk '{ $1 = ($1 > 0) } NR % 5 != 0' "$heart" > train.svm
	awk '{ $1 = ($1 > 0) } NR % 5 == 0' "$heart" > test.svm
	fmt="-f libsvm --dim 13" spec=softmax:13:2
	train=train.svm test=test.svm
else
	echo "data: synthetic, 3 classes in 4 dimensions (CSV)"
	gen_csv | awk 'NR == 1 || NR % 5 != 1' > train.csv
	gen_csv | awk 'NR == 1 || NR % 5 == 1' > test.csv
	fmt="-f csv --label-col last" spec=softmax:4:3
	train=train.csv test=test.csv
fi
# two shards, for two gradient functions; the test set as one
spirt-shard -q $fmt -n 2 --seed 1 "$train"
spirt-shard -q $fmt -d test "$test"
spirt-shard --stats | grep -E '^(dataset|shard)'

# 2. the model: softmax regression, D inputs to K classes, at step 0
spirt-init -q -m soft -S 1 "$spec"

# 3. the loop: each step both functions take a minibatch of 32 of their
#    shard (a new shuffle each epoch), spirt-agg averages the two
#    gradients in the store, spirt-update applies SGD with momentum
t=0
while [ "$t" -lt "$steps" ]; do
	spirt-grad -q -m soft -t "$t" -w 0 -b 32 -S 1 &
	spirt-grad -q -m soft -t "$t" -w 1 -b 32 -S 1
	wait $!
	spirt-agg -q -t "$t"
	spirt-update -q -m soft -t "$t" --opt momentum -r 0.1 --keep 2
	t=$((t + 1))
	if [ $((t % 20)) -eq 0 ]; then
		printf 'step %d: training loss %s\n' "$t" \
		    "$(spirt-store show "agg/$((t - 1))" | sed -n 's/^loss=//p')"
	fi
done

# 4. accuracy on the held-out samples, against always guessing the most
#    frequent class
spirt-eval -m soft | grep -E '^(step|samples|loss|accuracy)'
spirt-shard -d test --stats | awk '$1 == "total" {
	n = $3; m = 0; for (i = 5; i <= NF; i++) if ($i > m) m = $i
	printf "majority-class baseline=%.4f\n", m / n }'
