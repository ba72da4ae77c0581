# cmd/train/setup.sh - spirt-train's part: the tools, the data sets and the
# model. mk/train.mk puts cmd/train/loop.sh and the parts, in its order, into
# one script
# --byzantine peer:ATTACK (evaluation only): this whole peer lies.  Its
# code is not the driver's: the evaluation part spirt-train-byzpeer.sh
# (cmd/train-byz/peer.sh), beside this script (a build tree) or in
# ../libexec/spirt (installed), read only now: its check (byzpeer_check)
# follows the front's, so with another bad option that one is named first
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

# ---- data: --data's demo sets, sharded when missing (shtrain, shtest:
# the front checked and counted the rest, spirt-train(1)) ----
if [ "$shtrain" -eq 1 ]; then
	run spirt-shard -q -n "$nw" --seed "$seed" \
	    "$data/train-images-idx3-ubyte.gz" \
	    "$data/train-labels-idx1-ubyte.gz"
fi
if [ "$shtest" -eq 1 ]; then
	run spirt-shard -q -d test \
	    "$data/t10k-images-idx3-ubyte.gz" \
	    "$data/t10k-labels-idx1-ubyte.gz"
fi

# ---- model: initialise once; resume from the newest committed version ----
# newest: the highest step of model/$model@<step> in the store, or nothing
newest() {
	spirt-store ls "model/$model@" | cut -f1 | sed 's/.*@//' | sort -n | tail -n 1
}
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
