#!/bin/sh
# spirt-train - train a model on one peer: shard, init, then per step fan
# out M gradient functions, aggregate in the store, update in the store.
#
# This script is the toolkit's own example of composing its tools; every
# stage is a plain spirt command you can run by hand.  See spirt-train(1).
set -eu

PROG=spirt-train
VERSION=@VERSION@
USAGE="usage: spirt-train [-qv] [-a rule] [-b batch] [-e epochs] [-l lr]
                   [-m model] [-n functions] [-o optimiser] [-S seed]
                   [-s store] [--beat ms] [--bucket s]
                   [--byzantine list:attack]
                   [--checkpoint n] [--cold] [--data dir] [--deadline ms]
                   [--eval-every steps] [--evaluate cmd] [--every h]
                   [--exchange mode] [--function cmd] [--keep-digests]
                   [--keep-pulls] [--peer i] [--peer-rule rule] [--peers file]
                   [--schedule name] [--spec spec] [--steps n]
                   [--sync mode] [--target accuracy] [--test ds]
                   [--train ds] [--worker-momentum b]"

usage() {
	if [ "$1" -eq 0 ]; then
		printf '%s\n' "$USAGE"
		cat <<'HELP'

  -a, --rule RULE      aggregation: mean wmean median trim:F norm krum:f
                       mkrum:f:m cclip:T[:L] (default mean)
  -b, --batch N        samples per function per step (default 32)
  -e, --epochs N       epochs to train (default 5)
  -l, --lr LR          peak learning rate (default: per model, see man page)
  -m, --model NAME     mlp, cnn, resnet8 or softmax (default mlp); the
                       store key
  -n, --functions M    gradient functions per step (default 4)
  -o, --opt NAME       sgd, momentum, nesterov or adam (default adam)
  -S, --seed N         seed for data order and initialisation (default 1)
  -s, --store PATH     store (default $SPIRT_STORE or ./spirt.db)
      --beat MS        peers: beat every MS to the others, watch their
                       beats, close each step by the quorum (spirt-beat)
      --bucket S       average buckets of S gradients before the rule
      --byzantine L:A  evaluation only: functions L (e.g. 1,3) are
                       malicious with attack A: labelflip or one of
                       spirt-attack(1)'s (e.g. 1,3:signflip:10);
                       peer:A: with --peers, this whole peer is
                       (labelflip, an attack on its aggregate, or
                       equivocate:A: A to the pullers of STORE.fork;
                       over HTTP equivocate@HOST:PORT:A, STORE.fork
                       served there)
      --checkpoint N   a durable model version every N steps, volatile
                       ones between (default 100; 1: every step)
      --cold           start one process per function invocation
      --data DIR       Fashion-MNIST IDX files, sharded into the store
                       when it has no data set train
                       (default /usr/share/datasets/fashion-mnist)
      --deadline MS    each wait for a step's functions, the aggregation,
                       the update, an exchange, in ms (default 30000)
      --eval-every N   evaluate every N steps (default: each epoch)
      --evaluate CMD   the evaluation function, in spirt-eval's place
                       (words split at blanks; default $SPIRT_EVALUATE
                       or spirt-eval; spirt-function(7))
      --every H        peers: H local steps, then exchange the model change
                       and average it (default: every step, the gradient)
      --exchange MODE  peers: all (each pulls every aggregate, the default)
                       or parts (each combines a part of the vector from
                       every peer and serves it; spirt-peer(1), parts)
      --function CMD   the gradient function, in spirt-grad's place, warm
                       or --cold (words split at blanks; default
                       $SPIRT_FUNCTION or spirt-grad; spirt-function(7))
      --keep-digests   peers: keep every step's signed digests (default:
                       spent rounds are pruned, digests too)
      --keep-pulls     peers: also store the aggregates pulled from the
                       others, xagg/T/ID (default: kept in memory)
      --peer I         peers: this peer's share of the data, 0 to P-1
      --peer-rule RULE peers: how the exchange combines aggregates: mean
                       median trim:F norm cclip:T[:L] scclip:T[:L] (T a
                       radius or auto; default mean)
      --peers FILE     train as one of the P peers of FILE (id url lines):
                       spirt-peer exchange every step, apply gagg
      --schedule NAME  learning rate over the epochs: cosine or constant
                       (default cosine)
      --spec SPEC      model spec (default: by model name, or its
                       model@ in the store)
      --steps N        stop after N steps in all (default: epochs' worth)
      --sync MODE      full, meta or none (default meta; see man page)
      --target ACC     stop once test accuracy reaches ACC (0 to 1)
      --test DS        evaluate on data set DS of the store (spirt-shard
                       -d DS; default test)
      --train DS       train on data set DS of the store, sharded for
                       every function (spirt-shard -d DS -n P*M; default
                       train, or --data's)
      --worker-momentum B  aggregate the functions' momenta (spirt-agg(1))
  -q, --quiet          no progress lines
  -v, --verbose        print each command
  -h, --help           this help
  -V, --version        print version
HELP
		exit 0
	fi
	printf '%s\n' "$USAGE" >&2
	exit 64
}

die() {         # die CODE MESSAGE
	printf '%s: %s\n' "$PROG" "$2" >&2
	exit "$1"
}

# ---- options: short, --long VALUE and --long=VALUE ----
rule=mean batch=32 epochs=5 lr= model=mlp fns=4 opt=adam seed=1
store=${SPIRT_STORE:-spirt.db} cold=0 data=/usr/share/datasets/fashion-mnist
every=0 sched=cosine spec= steps=0 sync=meta target=0 quiet=0 verbose=0
ckpt=100 peers= peer=0 deadline=30000 keepdg=0 keeppl=0 bucket=1 byz= xh=0 beat=0
xmode=all
prule=mean wmom= fncmd=${SPIRT_FUNCTION:-spirt-grad}
train=train test=test dsopt=0 datagiven=0
evcmd=${SPIRT_EVALUATE:-spirt-eval} fnopt=SPIRT_FUNCTION evopt=SPIRT_EVALUATE
while [ $# -gt 0 ]; do
	case $1 in
	--*=*) a=${1%%=*} v=${1#*=}; shift; set -- "$a" "$v" "$@" ;;
	esac
	case $1 in
	-[abelmnoSs]|--rule|--batch|--epochs|--lr|--model|--functions|--opt|\
	--seed|--store|--beat|--bucket|--byzantine|--checkpoint|--data|--eval-every|\
	--schedule|--spec|--steps|--sync|--target|--deadline|--peer|--peers|\
	--every|--exchange|--peer-rule|--worker-momentum|--function|--evaluate|\
	--train|--test)
		[ $# -ge 2 ] || { printf '%s: %s: missing argument\n' "$PROG" \
		    "$1" >&2; usage 64; } ;;
	esac
	case $1 in
	-a|--rule) rule=$2; shift ;;
	-b|--batch) batch=$2; shift ;;
	-e|--epochs) epochs=$2; shift ;;
	-l|--lr) lr=$2; shift ;;
	-m|--model) model=$2; shift ;;
	-n|--functions) fns=$2; shift ;;
	-o|--opt) opt=$2; shift ;;
	-S|--seed) seed=$2; shift ;;
	-s|--store) store=$2; shift ;;
	--beat) beat=$2; shift ;;
	--bucket) bucket=$2; shift ;;
	--byzantine) byz=$2; shift ;;
	--checkpoint) ckpt=$2; shift ;;
	--cold) cold=1 ;;
	--keep-digests) keepdg=1 ;;
	--keep-pulls) keeppl=1 ;;
	--data) data=$2 datagiven=1; shift ;;
	--deadline) deadline=$2; shift ;;
	--peer) peer=$2; shift ;;
	--peer-rule) prule=$2; shift ;;
	--peers) peers=$2; shift ;;
	--worker-momentum) wmom=$2; shift ;;
	--eval-every) every=$2; shift ;;
	--evaluate) evcmd=$2 evopt=--evaluate; shift ;;
	--function) fncmd=$2 fnopt=--function; shift ;;
	--every) xh=$2; shift ;;
	--exchange) xmode=$2; shift ;;
	--schedule) sched=$2; shift ;;
	--spec) spec=$2; shift ;;
	--steps) steps=$2; shift ;;
	--sync) sync=$2; shift ;;
	--target) target=$2; shift ;;
	--test) test=$2 dsopt=1; shift ;;
	--train) train=$2 dsopt=1; shift ;;
	-q|--quiet) quiet=1 ;;
	-v|--verbose) verbose=1 ;;
	-h|--help) usage 0 ;;
	-V|--version) echo "$PROG $VERSION"; exit 0 ;;
	--) shift; break ;;
	-*) usage 64 ;;
	*) break ;;
	esac
	shift
done
[ $# -eq 0 ] || usage 64

# ---- the tools: beside this script, then PATH ----
# A spirt-train run by its path (a build tree's top, an installed bin)
# runs the tools of its own directory when that holds them: the directory
# goes first in PATH (exported: the tools that run others find them too),
# unless PATH holds it already, whose order then stands (a wrapper or a
# stub put before it is run).  A tool found nowhere is 69, named.
here=.
case $0 in */*) here=${0%/*} ;; esac
here=$(cd -P -- "$here" 2>/dev/null && pwd -P) || here=${0%/*}
if [ -x "$here/spirt-grad" ]; then
	onpath=0 _ifs=$IFS IFS=:
	for d in $PATH; do
		[ "$(cd -P -- "${d:-.}" 2>/dev/null && pwd -P)" != "$here" ] ||
			{ onpath=1; break; }
	done
	IFS=$_ifs
	[ "$onpath" -eq 1 ] || PATH=$here:$PATH
	export PATH
fi
for d in spirt-store spirt-shard spirt-init spirt-grad spirt-agg \
    spirt-update spirt-eval spirt-attack spirt-peer spirt-beat spirt-run; do
	command -v "$d" >/dev/null 2>&1 ||
		die 69 "$d: not found beside $PROG ($here) or on PATH"
done
# first MESSAGES TOOL: the first line, without the tool's name
# (the whole first line when it is not the tool's; a tool that said
# nothing, killed, is named)
first() {
	printf '%s\n' "$1" | sed -n "1{s/^$2: //;p;}" | grep . ||
		echo "$2 ended, saying nothing"
}
# ---- every option checked before any work: a bad one is 64 at once ----
# int OPT VAR MIN MAX: $VAR a decimal integer in [MIN, MAX], leading zeros
# dropped (sh reads 08 as octal); at most 18 digits, so sh computes with it
int() {
	eval "x=\$$2"
	case $x in
	''|*[!0-9]*) die 64 "$1: invalid number \"$x\"" ;;
	esac
	y=${x#"${x%%[!0]*}"}
	[ ${#y} -le 18 ] && [ "${y:-0}" -ge "$3" ] && [ "${y:-0}" -le "$4" ] ||
		die 64 "$1: $x is out of range ($3 to $4)"
	eval "$2=\${y:-0}"
}
# real OPT VALUE MIN MAX: a decimal number, no sign, in [MIN, MAX]
real() {
	awk -v x="$2" -v lo="$3" -v hi="$4" 'BEGIN {
		exit !(x ~ /^[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?$/ &&
		    x + 0 >= lo && x + 0 <= hi) }' ||
		die 64 "$1: \"$2\" is not a number from $3 to $4"
}
int -b batch 1 1048576
int -e epochs 1 1000000
int -n fns 1 256
int -S seed 0 999999999999999999
int --eval-every every 0 999999999999999999
int --steps steps 0 999999999999999999
int --checkpoint ckpt 0 999999999999999999
int --deadline deadline 1 86400000
int --peer peer 0 255
int --every xh 0 999999999999999999
int --beat beat 0 86400000
[ "$beat" -eq 0 ] || [ -n "$peers" ] || die 64 "--beat $beat: it needs --peers"
[ "$xh" -eq 0 ] || [ -n "$peers" ] || die 64 "--every $xh: it needs --peers"
case $xmode in
all) ;;
parts)	[ -n "$peers" ] || die 64 "--exchange parts: it needs --peers"
	# (every member owns a part: no quorum to close a round without one)
	[ "$beat" -eq 0 ] && [ "$keeppl" -eq 0 ] ||
		die 64 "--exchange parts: not with --beat or --keep-pulls" ;;
*) die 64 "--exchange $xmode: all or parts" ;;
esac
# peers: P members (the id location lines of --peers), this one's share
# --peer: np, this one's id and location (self, selfurl), the others'
# locations (others; urls: those over HTTP) and ID:LINE (oids), read by
# spirt-peer peers once; the data set is sharded over all P x M
# functions, this peer's are w0 .. w0+M-1
np=1 self= selfurl= others= urls= oids=
if [ -n "$peers" ]; then
	rc=0
	e=$(spirt-peer peers -P "$peers" --peer "$peer" 2>&1) || rc=$?
	[ "$rc" -lt 126 ] || rc=70
	[ "$rc" -eq 0 ] || die "$rc" "$(first "$e" spirt-peer)"
	eval "$e"
fi
w0=$((peer * fns)) nw=$((np * fns))
int --bucket bucket 1 256
real --target "$target" 0 1
[ -n "$store" ] || die 64 "-s: empty store path"
# --train, --test: data set names as spirt-shard takes them; --data
# shards Fashion-MNIST as train and test, the demo's shortcut
dsname() {
	case $2 in
	''|.*|*[!a-zA-Z0-9._-]*)
		die 64 "$1 $2: invalid data set name (letters, digits, . _ -, not first .)" ;;
	esac
	[ ${#2} -le 64 ] || die 64 "$1 $2: a data set name is at most 64 bytes"
}
dsname --train "$train"
dsname --test "$test"
[ "$datagiven" -eq 0 ] || [ "$dsopt" -eq 0 ] ||
	die 64 "--data $data: it shards train and test; with --train or --test, shard with spirt-shard -d"

# ---- per-model defaults: chosen so a user reaches the bars untuned ----
case $model in
mlp)     : "${spec:=mlp:784-256-128-10}" "${lr:=0.002}" ;;
cnn)     : "${spec:=cnn:1x28x28-32-64-10}" "${lr:=0.002}" ;;
resnet8) : "${spec:=resnet8:1x28x28-10}" "${lr:=0.002}" ;;
softmax) : "${spec:=softmax:784:10}" "${lr:=0.01}" ;;
*)       : "${lr:=0.001}" ;;     # spec: --spec, else its model@ in the store
esac
real -l "$lr" 0 1000000
case $opt in
sgd) optargs="--opt sgd" ;;
momentum) optargs="--opt momentum --momentum 0.9" ;;
nesterov) optargs="--opt momentum --momentum 0.9 --nesterov" ;;
adam) optargs="--opt adam" ;;
*) die 64 "optimiser $opt: expected sgd, momentum, nesterov or adam" ;;
esac
