# cmd/train/setup.sh - spirt-train's part: the tools, the data sets and the
# model. mk/train.mk puts cmd/train/loop.sh and the parts, in its order, into
# one script
# --byzantine peer:ATTACK (evaluation only): this whole peer lies.  Its
# code is not the driver's: the evaluation part spirt-train-byzpeer.sh
# (cmd/train-byz/peer.sh), beside this script (a build tree) or in
# ../libexec/spirt (installed), read only now
bpeer=
case $byz in
peer:*)
	_b=$here/spirt-train-byzpeer.sh
	[ -r "$_b" ] || _b=$here/../libexec/spirt/spirt-train-byzpeer.sh
	[ -r "$_b" ] || die 69 "--byzantine $byz: spirt-train-byzpeer.sh: not found beside $PROG ($here) or in $here/../libexec/spirt"
	# shellcheck disable=SC1090
	. "$_b"
	bpeer=${byz#peer:}
	byzpeer_check ;;
esac
# --byzantine LIST:ATTACK (evaluation only): the attack, asked of
# spirt-attack, which parses attacks, before any work (an empty input
# after a good attack is 65); the functions the front checked
if [ -n "$attack" ] && [ "$attack" != labelflip ]; then
	rc=0
	e=$(spirt-attack -o /dev/null "$attack" </dev/null 2>&1) || rc=$?
	[ "$rc" -ne 64 ] || die 64 "--byzantine $byz: unknown or malformed attack \"$attack\""
fi
# The rule for $fns inputs, and the model name, seed and spec, asked of
# the tools that take them (a dry run; spirt-init makes a model and throws
# it away): the same checks as theirs, before any work.
# (a tool not found or killed is 70, never the shell's 126 and above)
rc=0
e=$(spirt-agg $aggargs --check-rule "$fns" 2>&1) || rc=$?
[ "$rc" -lt 126 ] || rc=70
[ "$rc" -eq 0 ] || die "$rc" "-a $rule: $(first "$e" spirt-agg)"
if [ -n "$peers" ]; then
	rc=0
	e=$(spirt-agg $xargs_ --check-rule "$xq" 2>&1) || rc=$?
	[ "$rc" -lt 126 ] || rc=70
	[ "$rc" -eq 0 ] || die "$rc" "--peer-rule $prule: $(first "$e" spirt-agg)"
fi
# A model of one's own (not mlp, cnn or softmax) without --spec: the spec
# its versions in the store name (spirt-torch init, spirt-init made
# model@0); spirt-train makes only what spirt-init can
if [ -z "$spec" ]; then
	_k=$(spirt-store -s "$store" ls "model/$model@" 2>/dev/null | cut -f1 |
	    head -n 1)
	[ -n "$_k" ] || die 64 "model $model: not in $store, and no --spec: make its model@0 first (spirt-torch init -m $model, spirt-init -m $model SPEC) or give --spec"
	spec=$(spirt-store -s "$store" show "$_k" | sed -n 's/^name=//p')
	[ -n "$spec" ] || die 65 "$_k: no name in its record"
else
	e=$(spirt-init -q -m "$model" -S "$seed" -o - "$spec" 2>&1 >/dev/null) ||
		rc=$?
	[ "$rc" -lt 126 ] || rc=70
	[ "$rc" -eq 0 ] || die "$rc" "$(first "$e" spirt-init)"
fi
export SPIRT_SYNC="$sync" SPIRT_STORE="$store"
# the data sets by name, for the tools and the functions (spirt-grad,
# spirt-agg, spirt-store batch, spirt-eval; spirt-function(7))
export SPIRT_DATASET="$train" SPIRT_DATASET_TEST="$test"
# many functions share two cores: one BLAS thread each
export SPIRT_THREADS="${SPIRT_THREADS:-1}"

run() {         # run CMD...: echo it with -v, then run it
	[ "$verbose" -eq 0 ] || printf '+ %s\n' "$*" >&2
	"$@"
}
# The clock and the waits are spirt-run's (spirt-run(1)), on
# CLOCK_MONOTONIC, in ms: a wait's budget ends at END, now() plus the
# budget (--deadline), taken once; pause MS [END] waits MS, no longer
# than END, and is 75 once END is there
now() { spirt-run -c; }
pause() { SPIRT_PARENT=$$ spirt-run -w "$1" ${2:+-u "$2"}; }
# seconds MS: MS milliseconds as seconds with 3 decimals (sh has integers)
seconds() { printf '%d.%03d' $(($1 / 1000)) $(($1 % 1000)); }
tty=0
say() {         # a message line; on a terminal, first clear the progress bar
	[ "$quiet" -eq 0 ] || return 0
	tell "$@"
}
tell() {        # say, also with -q: what happened to a function is no progress
	[ "$tty" -eq 0 ] || printf '\r\033[K' >&2
	printf '%s: %s\n' "$PROG" "$*" >&2
}

# ---- data: shard the training set over the functions, load the test set ----
# (--data's, when no --train or --test names the store's own)
hasds() { spirt-store ls "data/$1/info" 2>/dev/null | grep -q .; }
if [ "$dsopt" -eq 0 ]; then
	if ! hasds train; then
		run spirt-shard -q -n "$nw" --seed "$seed" \
		    "$data/train-images-idx3-ubyte.gz" \
		    "$data/train-labels-idx1-ubyte.gz"
	fi
	if ! hasds test; then
		run spirt-shard -q -d test \
		    "$data/t10k-images-idx3-ubyte.gz" \
		    "$data/t10k-labels-idx1-ubyte.gz"
	fi
fi
hasds "$train" || die 66 "--train $train: store $store has no data set $train; make it: spirt-shard -s $store -d $train -n $nw FILE [LABELS]"
hasds "$test" || die 66 "--test $test: store $store has no data set $test; make it: spirt-shard -s $store -d $test FILE [LABELS]"
# the steps per epoch: the smallest shard's samples in batches, as
# spirt-grad and spirt-shard count them (spirt-shard(1), The assignment)
sh=$(spirt-shard -d "$train" --stats |
    sed -n '1s/.* samples \([0-9]*\) .* shards \([0-9]*\) .*/\1 \2/p')
nsam=${sh% *} nsh=${sh#* }
[ -n "$sh" ] || die 65 "--train $train: spirt-shard -d $train --stats: no shards in store $store"
# (a shard for each of the P x M functions; -n K/P fits K shards)
if [ "$nsh" -ne "$nw" ]; then
	e=
	[ $((nsh % np)) -ne 0 ] || e=", or train with -n $((nsh / np))"
	[ "$np" -eq 1 ] || e="$e ($np peers)"
	die 65 "--train $train: store $store has data for $nsh workers, not $nw; shard it again: spirt-shard -s $store -d $train -n $nw FILE [LABELS]$e"
fi
per=$((nsam / nsh))
[ "$batch" -le "$per" ] || die 64 "batch $batch is larger than a worker's $per samples"
spe=$(((per + batch - 1) / batch))
total=$((spe * epochs))
# --steps ends the run early; the schedule still spans the epochs
stop=$total
[ "$steps" -eq 0 ] || [ "$steps" -ge "$total" ] || stop=$steps
[ "$every" -gt 0 ] || every=$spe

# ---- model: initialise once; resume from the newest committed version ----
# newest: the highest step of model/$model@<step> in the store, or nothing
newest() {
	spirt-store ls "model/$model@" | cut -f1 | sed 's/.*@//' | sort -n | tail -n 1
}
last=$(newest)
# fits OPT DS: the spec fits data set DS, its features and classes: a
# gradient of one sample by the initial model, written nowhere (spirt-grad
# checks them; its samples no training's in SPIRT_SAMPLE_LOG); 65 before
# any work
fits() {
	rc=0
	e=$(unset SPIRT_SAMPLE_LOG
	    spirt-init -q -m "$model" -S "$seed" -o - "$spec" 2>/dev/null |
	    spirt-grad -q -d "$2" -p - -b 1 -o /dev/null 2>&1) || rc=$?
	[ "$rc" -ne 65 ] ||
		die 65 "$1 $2: --spec $spec does not fit it: $(first "$e" spirt-grad)"
}
if [ -z "$last" ]; then
	fits --train "$train"
	fits --test "$test"
	# a run leaves its last step's gradients and batch statistics for
	# inspection; another model's, they would meet this one's steps of
	# the same numbers (grad/ and state/ are the store's, not a model's)
	run spirt-store -q prune -t 9223372036854775807 grad/ state/ ||
		die 74 "$store: could not remove another model's gradients (grad/, state/)"
	run spirt-init -q -m "$model" -S "$seed" "$spec"
	last=0
fi
