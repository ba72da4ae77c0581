# bench/start.sh - sourced by the benches that race spirt against PyTorch:
# both sides start from the same initial weights, spirt's model@0.
#   start_model SPEC SEED FILE
# writes model@0 of SPEC drawn from SEED to FILE (spirt-init -o: the
# command spirt-train -S SEED runs into its store), which the torch side
# loads (bench/torch_start.py), and checks, loudly (exit 70), that
#  1. spirt-init into a store writes those bytes (what spirt-train starts
#     from is the file, bit for bit), and
#  2. the file's model in torch, loaded as the benches load it, has
#     spirt-eval's test loss (within 1e-5, float32 rounding) and
#     accuracy (within one sample): the layout and the transposition of
#     the weights are right.
# Needs PY (the python with torch), FMNIST and spirt's tools in PATH.

start_model() {
	_sp=$1 _seed=$2 _f=$3
	_m=${_sp%%:*}
	_d=$(mktemp -d)
	spirt-init -q -m "$_m" -S "$_seed" -o "$_f" "$_sp" &&
	spirt-init -q -s "$_d/s" -m "$_m" -S "$_seed" "$_sp" || {
		rm -rf "$_d"
		echo "start_model: spirt-init $_sp -S $_seed failed" >&2
		exit 70
	}
	if ! spirt-store -s "$_d/s" get "model/$_m@0" | cmp -s - "$_f"; then
		rm -rf "$_d"
		echo "start_model: $_sp -S $_seed: spirt-init -o and the store's model@0 differ" >&2
		exit 70
	fi
	spirt-shard -q -s "$_d/s" -d test "$FMNIST/t10k-images-idx3-ubyte.gz" \
	    "$FMNIST/t10k-labels-idx1-ubyte.gz" &&
	_se=$(spirt-eval -q -s "$_d/s" -m "$_m" -p "$_f" | awk -F= '
		$1 == "loss" { l = $2 } $1 == "accuracy" { a = $2 }
		END { print l, a }') &&
	_te=$($PY bench/torch_start.py "$_sp" "$_f") || {
		rm -rf "$_d"
		echo "start_model: $_sp -S $_seed: the evaluations failed" >&2
		exit 70
	}
	rm -rf "$_d"
	# shellcheck disable=SC2086
	awk -v s="$_se" -v t="$_te" 'BEGIN {
		split(s, a, " "); split(t, b, " ")
		d = a[1] - b[1]; d = d < 0 ? -d : d
		e = a[2] - b[2]; e = e < 0 ? -e : e
		exit !(a[1] != "" && b[1] != "" && d <= 1e-5 * (1 + a[1]) &&
		    e <= 1.5e-4) }' || {
		echo "start_model: $_sp -S $_seed: torch does not start from spirt's model@0: test loss and accuracy $_te in torch, $_se in spirt-eval" >&2
		exit 70
	}
}
