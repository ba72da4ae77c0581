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
                   [--function cmd] [--keep-digests] [--keep-pulls]
                   [--peer i] [--peer-rule rule] [--peers file]
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
  -m, --model NAME     mlp, cnn or softmax (default mlp); the store key
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
      --spec SPEC      model spec (default: by model name)
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
	--every|--peer-rule|--worker-momentum|--function|--evaluate|--train|--test)
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
# peers: P members (id url lines of --peers), this one's share --peer
np=1
if [ -n "$peers" ]; then
	[ -r "$peers" ] || die 66 "--peers $peers: cannot read it"
	np=$(grep -c '^[[:space:]]*[^#[:space:]]' "$peers") || :
	[ "$np" -ge 1 ] || die 65 "--peers $peers: no peer in it"
	[ "$peer" -lt "$np" ] || die 64 "--peer $peer: $peers has $np peers (0 to $((np - 1)))"
fi
# the data set is sharded over all P x M functions; this peer's are
# w0 .. w0+M-1
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
softmax) : "${spec:=softmax:784:10}" "${lr:=0.01}" ;;
*)       [ -n "$spec" ] || die 64 "model $model: give --spec" ; : "${lr:=0.001}" ;;
esac
real -l "$lr" 0 1000000
case $opt in
sgd) optargs="--opt sgd" ;;
momentum) optargs="--opt momentum --momentum 0.9" ;;
nesterov) optargs="--opt momentum --momentum 0.9 --nesterov" ;;
adam) optargs="--opt adam" ;;
*) die 64 "optimiser $opt: expected sgd, momentum, nesterov or adam" ;;
esac
# ---- across peers, and a Byzantine peer (evaluation only) ----
# peer_rule_args RULE Q: spirt-peer exchange's options for --peer-rule
# RULE, Q the fewest aggregates a round combines (its default quorum,
# more than half of the P peers); only numbers reach its argv.  A radius
# "auto" is the (f+1)-th largest distance, f = (Q-1)/2 the most a round
# of Q tolerates (1 of 4 peers)
peer_rule_args() {
	case $1 in
	mean|median|norm) echo "-r $1" ;;
	trim:*[!0-9.]*|trim:) return 1 ;;
	trim:*) echo "-r trim --trim ${1#trim:}" ;;
	cclip:?*|scclip:?*)
		pr=${1%%:*} pa=${1#*:} pl=1
		pt=${pa%%:*}
		case $pa in *:*) pl=${pa#*:} ;; esac
		case $pl in ''|*[!0-9]*) return 1 ;; esac
		case $pt in
		auto) echo "-r $pr --tau auto --byzantine $((($2 - 1) / 2)) --iters $pl" ;;
		''|*[!0-9.eE-]*) return 1 ;;
		*) echo "-r $pr --tau $pt --iters $pl" ;;
		esac ;;
	*) return 1 ;;
	esac
}
# byzpeer_check: --byzantine peer:A, checked before any work.  A peer
# that flips labels is every function of it flipping (the functions'
# form); any other attack is spirt-attack -a on its aggregate before each
# exchange; equivocate:A publishes the honest aggregate in the store and
# the crafted one in STORE.fork, with a round of its own there, so the
# pullers whose peers file names STORE.fork for this peer get the other
# story, each under this peer's signature.  Over HTTP (this peer's line
# a URL), equivocate@HOST:PORT:A: a second spirt-peer serve serves
# STORE.fork there (fork_serve), and the pullers whose peers file names
# that URL for this peer get the other story
bpid= bequiv=0 battack= bfork= bflisten= bsrv=
byzpeer_check() {
	bspec=$byz byz=
	[ -n "$peers" ] || die 64 "--byzantine $bspec: a Byzantine peer needs --peers"
	[ "$xh" -eq 0 ] || die 64 "--byzantine $bspec: not with --every"
	battack=$bpeer
	case $bpeer in
	equivocate:*) bequiv=1 battack=${bpeer#equivocate:} ;;
	equivocate@*)
		# HOST:PORT:A, HOST a name, an IPv4 address or [IPv6]
		bequiv=1 _r=${bpeer#equivocate@}
		case $_r in
		\[*\]:*) _h=${_r%%]*}] ;;
		*) _h=${_r%%:*} ;;
		esac
		_r=${_r#"$_h"} _r=${_r#:} _p=${_r%%:*}
		printf '%s\n' "$_h:$_p" | grep -Eqx \
		    '([0-9A-Za-z.-]+|\[[0-9A-Fa-f:.]+\]):[1-9][0-9]{0,4}' ||
			die 64 "--byzantine $bspec: expected peer:equivocate@HOST:PORT:ATTACK"
		[ "$_p" -le 65535 ] ||
			die 64 "--byzantine $bspec: port $_p is out of range (1 to 65535)"
		bflisten=$_h:$_p battack=${_r#"$_p"} battack=${battack#:} ;;
	esac
	[ -n "$battack" ] || die 64 "--byzantine $bspec: no attack after peer:"
	if [ "$battack" = labelflip ]; then
		[ "$bequiv" -eq 0 ] || die 64 "--byzantine $bspec: equivocate needs an attack on the aggregate, not labelflip"
		byz="$(seq -s, 0 $((fns - 1))):labelflip"
		return 0
	fi
	rc=0
	e=$(spirt-attack -o /dev/null "$battack" </dev/null 2>&1) || rc=$?
	[ "$rc" -ne 64 ] || die 64 "--byzantine $bspec: unknown or malformed attack \"$battack\""
	[ "$bequiv" -eq 1 ] || return 0
	_u=$(awk -v p="$peer" '/^[[:space:]]*[^#[:space:]]/ {
		if (n++ == p) { print $2; exit } }' "$peers")
	case $_u in
	http://*)
		[ -n "$bflisten" ] || die 64 "--byzantine $bspec: over HTTP the other story is served at an address of its own: peer:equivocate@HOST:PORT:ATTACK"
		_u=${_u#http://} _u=${_u#*@} _u=${_u%/}
		[ "$_u" != "$bflisten" ] || die 64 "--byzantine $bspec: $bflisten is this peer's own address ($peers)" ;;
	*://*) die 64 "--byzantine $bspec: this peer's URL $_u: equivocation is played over http:// or store paths" ;;
	*) [ -z "$bflisten" ] || die 64 "--byzantine $bspec: this peer's line in $peers is a store path: the other story is $store.fork, no address (peer:equivocate:ATTACK)" ;;
	esac
	bfork=$store.fork
}
# byzpeer_publish T: before step T's exchange, this peer lies
byzpeer_publish() {
	[ "$battack" != labelflip ] || return 0
	if [ "$bequiv" -eq 0 ]; then
		run spirt-attack -q -S "$seed" -t "$1" -a agg "$battack" ||
			die 75 "step $1: spirt-attack -a agg $battack failed"
		return 0
	fi
	run spirt-attack -q -S "$seed" -t "$1" -a agg -o "$store.byz.rec" \
	    "$battack" || die 75 "step $1: spirt-attack -a agg $battack failed"
	# the fork is made whole, then renamed: a puller that opened it half
	# made (no scratch environment yet) would never see its xagg/
	f=$bfork
	[ -d "$bfork" ] || { f=$bfork.tmp; rm -rf "$f"; }
	spirt-store get "model/$model@$1" >"$store.byz-model.rec" &&
	    spirt-store -s "$f" put "model/$model@$1" "$store.byz-model.rec" &&
	    spirt-store -s "$f" put "agg/$1" "$store.byz.rec" &&
	    spirt-store -q -s "$f" prune -t "$1" "model/$model@" agg/ xagg/ \
	    gagg/ digest/ && { [ "$f" = "$bfork" ] || mv "$f" "$bfork"; } ||
	    die 74 "step $1: $bfork: could not write the other story"
	# the other story's round, beside this one's (its outcome is no matter)
	$xch -s "$bfork" -t "$1" >/dev/null 2>>"$store.byz.log" &
	bpid=$!
}
# byzpeer_after T: after step T's round: the peer goes on whatever its
# round said (the others may have left it out); without gagg/T it applies
# its own aggregate
byzpeer_after() {
	[ -z "$bpid" ] || { wait "$bpid" || :; bpid=; }
	spirt-store get "gagg/$1" >/dev/null 2>&1 ||
		spirt-store get "agg/$1" | spirt-store -q put "gagg/$1" - ||
		die 74 "step $1: no gagg/$1, and agg/$1 could not stand for it"
}

# (the parameters are numbers: nothing else may reach spirt-agg's argv)
case $rule in
mean|wmean|median|norm) aggargs="-r $rule" ;;
trim:*[!0-9.]*|krum:*[!0-9]*|mkrum:*[!0-9:]*|mkrum:*:*:*) aggargs= ;;
trim:?*) aggargs="-r trim --trim ${rule#trim:}" ;;
krum:?*) aggargs="-r krum --byzantine ${rule#krum:}" ;;
mkrum:?*:?*) r=${rule#mkrum:}; aggargs="-r mkrum --byzantine ${r%%:*} --select ${r#*:}" ;;
cclip:*[!0-9.eE:-]*|cclip:*:*:*) aggargs= ;;
cclip:?*:?*) r=${rule#cclip:}; aggargs="-r cclip --tau ${r%%:*} --iters ${r#*:}" ;;
cclip:?*) aggargs="-r cclip --tau ${rule#cclip:}" ;;
*) aggargs= ;;
esac
[ -n "$aggargs" ] || die 64 "-a $rule: expected mean, wmean, median, trim:F, \
norm, krum:f, mkrum:f:m or cclip:T[:L]"
[ "$bucket" -le 1 ] || aggargs="$aggargs --bucket $bucket --seed $seed"
if [ -n "$wmom" ]; then
	real --worker-momentum "$wmom" 0 0.999999
	aggargs="$aggargs --worker-momentum $wmom"
fi
# the exchange's rule across the P peers (peer_rule_args)
[ "$prule" = mean ] || [ -n "$peers" ] ||
	die 64 "--peer-rule $prule: it needs --peers"
xq=$((np / 2 + 1))
xargs_=$(peer_rule_args "$prule" "$xq") ||
	die 64 "--peer-rule $prule: expected mean, median, trim:F, norm, \
cclip:T[:L] or scclip:T[:L] (T a radius or auto)"
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
# --function and --evaluate (spirt-function(7)): a command line split at
# blanks, never globbed nor read by a shell, the arguments spirt-grad's
# or spirt-eval's after it; its first word is looked for as the tools
# are (the function's only without SPIRT_FANOUT: that runs it elsewhere)
# fnword OPT CMD: $w1, CMD's first word; a blank CMD is 64
fnword() {
	set -f
	# shellcheck disable=SC2086
	set -- "$1" $2
	set +f
	[ $# -ge 2 ] || die 64 "$1: an empty command"
	w1=$2
}
fnword "$evopt" "$evcmd"
command -v "$w1" >/dev/null 2>&1 ||
	die 69 "$evopt $evcmd: $w1: not found beside $PROG ($here) or on PATH"
fnword "$fnopt" "$fncmd"
[ -n "${SPIRT_FANOUT-}" ] || command -v "$w1" >/dev/null 2>&1 ||
	die 69 "$fnopt $fncmd: $w1: not found beside $PROG ($here) or on PATH"
# --byzantine peer:ATTACK (evaluation only): this whole peer lies
bpeer=
case $byz in peer:*) bpeer=${byz#peer:}; byzpeer_check ;; esac
# --byzantine LIST:ATTACK (evaluation only): the malicious functions, and
# spirt-attack's attack or labelflip; asked of spirt-attack, which parses
# attacks, before any work (an empty input after a good attack is 65)
bad=" " attack=
if [ -n "$byz" ]; then
	list=${byz%%:*} attack=${byz#*:}
	case $list in
	''|*[!0-9,]*|,*|*,|*,,*) die 64 "--byzantine $byz: expected functions, e.g. 1,3:signflip" ;;
	esac
	[ "$attack" != "$byz" ] && [ -n "$attack" ] ||
		die 64 "--byzantine $byz: no attack after the functions"
	for w in $(printf '%s\n' "$list" | tr ',' ' '); do
		int --byzantine w 0 $((fns - 1))
		case $bad in *" $w "*) die 64 "--byzantine $byz: function $w twice" ;; esac
		bad="$bad$w "
	done
	[ "$attack" != labelflip ] || [ "$fncmd" = spirt-grad ] ||
		die 64 "--byzantine $byz: labelflip is spirt-grad's --label-flip, not $fnopt $fncmd's"
	if [ "$attack" != labelflip ]; then
		rc=0
		e=$(spirt-attack -o /dev/null "$attack" </dev/null 2>&1) || rc=$?
		[ "$rc" -ne 64 ] || die 64 "--byzantine $byz: unknown or malformed attack \"$attack\""
	fi
	# (the store's worker numbers: with --peers this peer's functions
	# are w0 .. w0+M-1)
	list=$(for w in $bad; do printf '%s,' $((w0 + w)); done | sed 's/,$//')
fi
# SPIRT_FANOUT: with --cold, the command that runs a step's functions in
# place of one local process each (GNU parallel over ssh, srun, ...): it
# reads the worker numbers on stdin and runs the spirt-grad command that
# follows it once for each, {} replaced by the number; its words split at
# blanks (fan_grads)
fanout=
if [ -n "${SPIRT_FANOUT-}" ]; then
	[ "$cold" -eq 1 ] ||
		die 64 "SPIRT_FANOUT: it runs cold functions; give --cold"
	[ "$attack" != labelflip ] ||
		die 64 "SPIRT_FANOUT: --byzantine $byz starts its functions itself"
	fanout=$SPIRT_FANOUT
fi
case $sched in
cosine|constant) ;;
*) die 64 "schedule $sched: expected cosine or constant" ;;
esac
case $sync in
full) SPIRT_SYNC=full ;; meta) SPIRT_SYNC=meta ;; none) SPIRT_SYNC=none ;;
*) die 64 "sync $sync: expected full, meta or none" ;;
esac
# The rule for $fns inputs, and the model name, seed and spec, asked of
# the tools that take them (a dry run; spirt-init makes a model and throws
# it away): the same checks as theirs, before any work.
# first MESSAGES TOOL: the first line, without the tool's name
# (the whole first line when it is not the tool's; a tool that said
# nothing, killed, is named)
first() {
	printf '%s\n' "$1" | sed -n "1{s/^$2: //;p;}" | grep . ||
		echo "$2 ended, saying nothing"
}
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
e=$(spirt-init -q -m "$model" -S "$seed" -o - "$spec" 2>&1 >/dev/null) ||
	rc=$?
[ "$rc" -lt 126 ] || rc=70
[ "$rc" -eq 0 ] || die "$rc" "$(first "$e" spirt-init)"
export SPIRT_SYNC SPIRT_STORE="$store"
# the data sets by name, for the tools and the functions (spirt-grad,
# spirt-agg, spirt-store batch, spirt-eval; spirt-function(7))
export SPIRT_DATASET="$train" SPIRT_DATASET_TEST="$test"
# many functions share two cores: one BLAS thread each
export SPIRT_THREADS="${SPIRT_THREADS:-1}"

run() {         # run CMD...: echo it with -v, then run it
	[ "$verbose" -eq 0 ] || printf '+ %s\n' "$*" >&2
	"$@"
}
now() { date +%s%N; }    # nanoseconds since the epoch
# seconds NS: NS nanoseconds as seconds with 3 decimals (sh has integers)
seconds() { printf '%d.%03d' $(($1 / 1000000000)) $(($1 % 1000000000 / 1000000)); }
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
	run spirt-init -q -m "$model" -S "$seed" "$spec"
	last=0
fi
# ---- rejoin (--beat): a peer behind the others (restarted after it died,
# or cut off by a partition) joins them at a step it names: it beats
# "catchup, joins at step J" to every peer, J a few steps ahead of the
# most advanced one; fetches model@J and its optimiser state from that
# peer as soon as they are there; and takes step J with the others, who
# leave it out before J and wait for it at J as for a live member (up to
# the straggler deadline).  Its model is checked against the others'
# signed digests in that round; once the round's record names it a
# member, it beats as live.  A join that misses (the others saw the
# announcement too late, or went past J before this peer could take
# it, or its exchange failed) is tried again further ahead, the margin
# doubled, up to the run's end (then it fetches the last model).  J is
# an epoch's first step (and a round's, with --every): there the share of
# the data is every peer's own again (back), so the rejoiner gets its
# data back as it joins, and trains nothing before.  But when the others
# wait for it (they made no step in a beat) and the round before their
# step combined it, it joins at their step: its share is still its own
# there. ----
joining=0 jmargin=0 jlast=-1 best= src= srcid= lastx=
# jr: the steps J is a multiple of: the epoch's, and --every's rounds
# (xu steps each)
jr=$spe xu=1
[ "$xh" -eq 0 ] || xu=$xh
if [ "$xh" -gt 0 ]; then
	_a=$spe _b=$xh
	while [ "$_b" -gt 0 ]; do _c=$((_a % _b)) _a=$_b _b=$_c; done
	jr=$((spe / _a * xh))
fi
# other_peers: "id location" of each other peer of --peers
other_peers() {
	awk -v p="$peer" '/^[[:space:]]*[^#[:space:]]/ {
		if (n++ != p) print $1, $2 }' "$peers"
}
# newest_at LOCATION: the newest model step in that peer's store
# (nothing if it has none); fails if it does not answer
newest_at() {
	l=$(SPIRT_TIMEOUT=10s spirt-store -s "$1" ls "model/$model@" \
	    2>/dev/null) || return 1
	printf '%s\n' "$l" | cut -f1 | sed 's/.*@//' | sort -n | tail -n 1
}
# peers_newest: $best, $src, $srcid: the newest model step among the
# other peers that answer, and that peer (a restarted peer asks until one
# of them answers, at most --deadline: a link that just came back may
# take a moment)
peers_newest() {
	best= src= srcid= cend=$(($(now) + deadline * 1000000))
	while :; do
		answered=0
		while read -r id u; do
			s=$(newest_at "$u") || continue
			answered=1
			[ -n "$s" ] || continue
			if [ -z "$best" ] || [ "$s" -gt "$best" ]; then
				best=$s src=$u srcid=$id
			fi
		done <<EOF
$(other_peers)
EOF
		[ "$answered" -eq 0 ] && [ "$last" -gt 0 ] &&
		    [ "$(now)" -lt "$cend" ] || break
		sleep 1
	done
}
# behind: at the start, with --beat, this peer joins the others if one
# of them is further on than it is
behind() {
	[ "$beat" -gt 0 ] && [ -n "$peers" ] || return 0
	peers_newest
	[ -n "$best" ] && [ "$best" -gt "$last" ] || return 0
	joining=1
}
behind
# the run's last model version and optimiser state, made durable; then the
# older durable versions go, which --keep 2 had to leave while they were
# the last durable ones (a power loss would have gone back to them)
persist() {
	run spirt-store -q persist "model/$model@" "opt/$model@" ||
	    die 74 "could not make model/$model versions durable"
	top=$(newest)
	[ -z "$top" ] || [ "$top" -lt 2 ] ||
	    run spirt-store -q prune -t $((top - 1)) "model/$model@" "opt/$model@"
}
[ "$last" -lt "$stop" ] || { persist; say "model/$model@$last: already trained ($stop steps)"; exit 0; }

# model versions between checkpoints are volatile (spirt-store(5)): a power
# loss costs at most the last $ckpt steps, never the store; the last
# version of the run is made durable below
# (--every H: model@s0 of the round stays until its outer step, H later)
keep=2
[ "$xh" -lt 2 ] || keep=$((xh + 1))
upd="spirt-update -q -m $model -r $lr $optargs --schedule $sched --lr-total $total --keep $keep --checkpoint $ckpt"
# peers: each step's update applies the global aggregate of the exchange;
# with --every H, local steps apply agg and each round's last step the
# outer step (round)
xch= xsrc=
if [ -n "$peers" ]; then
	[ "$xh" -gt 0 ] || upd="$upd -a gagg"
	xch="spirt-peer exchange -q -m $model -P $peers --deadline $deadline $xargs_"
	# (--beat: the step closes by the quorum of this store's watcher)
	[ "$beat" -eq 0 ] || xch="$xch --beats"
	# (--keep-pulls: what the others sent, stored for inspection)
	[ "$keeppl" -eq 0 ] || xch="$xch --keep-pulls"
	# --every H: the rounds exchange the model's change
	[ "$xh" -eq 0 ] || xsrc="-a delta"
	# each step's round removes the spent ones (before t-1: a peer a
	# step behind still finds t-1), digests too unless kept
	# (--keep-digests); --every prunes in round()
	if [ "$xh" -eq 0 ]; then
		xch="$xch --prune 1"
		[ "$keepdg" -eq 0 ] || xch="$xch --keep-digests"
	fi
fi
# --every: the spent rounds' digests go too, unless kept (--keep-digests)
spent=digest/
[ "$keepdg" -eq 0 ] || spent=
# -R: a rerun after a crash between aggregate and update redoes the (identical)
# aggregate; -P: each step removes the spent gradients of steps before t-1;
# --batch: no gradient counts more samples than the assignment in force
# gives its function at its step (wmean; more than -b after a death)
agg="spirt-agg -q -R -P --batch $batch $aggargs"
# peers, a round a step: the aggregate is written as this peer's published
# one, xagg/<t>/<id> (the id of line --peer of the peers file), which the
# exchange publishes as it is instead of copying agg/<t> there (3% of a
# step); never replaced, -R or not.  A Byzantine peer (evaluation only)
# crafts its agg/<t> before the round, so it keeps agg/<t>.
# (self: this peer's id, that line's first word; the beats use it too)
self=
[ -z "$peers" ] || self=$(awk -v p="$peer" '/^[[:space:]]*[^#[:space:]]/ {
	if (n++ == p) { print $1; exit } }' "$peers")
aggkey=agg
if [ -n "$peers" ] && [ "$xh" -eq 0 ] && [ -z "$bpeer" ]; then
	case $self in
	''|[!A-Za-z0-9]*|*[!A-Za-z0-9_-]*)
		die 65 "--peers $peers: line $((peer + 1)) has no valid peer id" ;;
	esac
	agg="$agg --publish $self" aggkey=xagg
fi
# the log and plot are the model's: models trained in one store keep theirs
log=$store.train-$model.tsv plot=$store.train-$model.png
[ -s "$log" ] || printf 'seconds\tstep\tepoch\tloss\ttest_loss\ttest_accuracy\n' > "$log"
# on resume the clock goes on from the log's last line; lines of steps a
# power loss undid (volatile versions) go
if awk -F'\t' -v l="$last" 'NR > 1 && $2 > l { f = 1 } END { exit !f }' "$log"; then
	awk -F'\t' -v l="$last" 'NR == 1 || $2 <= l' "$log" >"$log.tmp" &&
	    mv "$log.tmp" "$log"
fi
t0=$(awk -F'\t' 'NR > 1 { s = $1 } END { print s + 0 }' "$log")

# flip W: --label-flip if function W flips labels (--byzantine W:labelflip)
flip() {
	[ "$attack" = labelflip ] || return 0
	case $bad in *" $1 "*) echo --label-flip ;; esac
}
# attack T: the malicious functions' gradients of step T replaced
attack() {
	[ -n "$attack" ] && [ "$attack" != labelflip ] || return 0
	run spirt-attack -q -S "$seed" -t "$1" -w "$list" "$attack" ||
	    die 75 "step $1: spirt-attack $attack failed"
}

# ---- heartbeats (--beat): this peer beats into its store and to every
# other peer of --peers (their URLs, or their stores' paths on one host);
# a watcher on its store declares the silent dead (spirt-beat(1)), and
# the exchange closes each step by its quorum: a dead peer is left out at
# once, a minority stops with 75.  The peers' share of the data follows
# the rounds' member sets, which every member agrees on (the signed
# digests, all or nothing), not the watcher, which each peer has its own
# of (peerout, below). ----
beatpids=
beats_start() {
	[ "$beat" -gt 0 ] && [ -n "$peers" ] || return 0
	# (the other lines' URLs; ours, $self's, is line $peer)
	others=$(awk -v p="$peer" '/^[[:space:]]*[^#[:space:]]/ {
		if (n++ != p) print $2 }' "$peers")
	[ "$verbose" -eq 0 ] ||
	    printf '+ spirt-beat -B %s -m %s beat %s %s\n' "$beat" "$model" "$self" "$(echo $others)" >&2
	if [ "$joining" -eq 0 ]; then
		beater -m "$model"
	else
		beater --status catchup
	fi
	if [ "$quiet" -eq 1 ]; then
		SPIRT_PARENT=$$ spirt-beat -q -B "$beat" watch &
	else
		SPIRT_PARENT=$$ spirt-beat -B "$beat" watch &
	fi
	beatpids="$beatpids $!"
	guarded
}
# beater ARGS...: (re)start this peer's beater, spirt-beat beat ARGS; the
# one before is killed without a last word (its "stop" would read as a
# death: the new one's first beat follows at once)
beatpid=
beater() {
	if [ -n "$beatpid" ]; then
		# (out of the guard's list first: its end is no death)
		beatpids=$(for p in $beatpids; do
			[ "$p" = "$beatpid" ] || printf '%s ' "$p"; done)
		guarded
		kill -KILL "$beatpid" 2>/dev/null || :
		wait "$beatpid" 2>/dev/null || :
	fi
	[ "$verbose" -eq 0 ] ||
	    printf '+ spirt-beat -B %s %s beat %s %s\n' "$beat" "$*" "$self" "$(echo $others)" >&2
	# shellcheck disable=SC2086
	SPIRT_PARENT=$$ spirt-beat -q -B "$beat" "$@" beat "$self" $others &
	beatpid=$! beatpids="$beatpids $!"
	guarded
}
# join_prepare: before each step while joining: name the step J this peer
# joins at, beat it, and fetch model@J (join_fetch); $t is then J.  The
# first margin is the steps the others make in two beats and half a
# second, the time they take to see the announcement, from their pace
# over one beat; with --every H, J is a round's first step
join_prepare() {
	[ "$joining" -eq 1 ] || return 0
	while :; do
		peers_newest
		[ -n "$best" ] || die 75 "joining: no other peer answers with a model; rerun to retry"
		still=0
		if [ "$jmargin" -eq 0 ]; then
			b0=$best n0=$(now)
			sleep "$(seconds $((beat * 1000000)))"
			b1=$(newest_at "$src") || b1=$b0
			[ -n "$b1" ] || b1=$b0
			n1=$(now)
			jmargin=$(( (b1 - b0) * (2 * beat + 500) * 1000000 /
			    (n1 - n0 + 1) + 2 ))
			best=$b1
			[ "$b1" -ne "$b0" ] || still=1
		fi
		j=$((best + jmargin))
		# (the others made no step in a beat: they may wait for this
		# peer, a member of the last round that a minority cannot go
		# on without; it joins at the step they are at)
		# (also when they made none since the last attempt, 2 s or
		# more before)
		[ "$best" != "${jprev:-}" ] ||
		    [ $(($(now) - jprevt)) -lt 2000000000 ] || still=1
		[ "$best" = "${jprev:-}" ] || jprev=$best jprevt=$(now)
		[ "$still" -eq 0 ] || [ "$xh" -ne 0 ] || j=$best
		[ "$j" -gt "$jlast" ] || [ "$still" -eq 1 ] || j=$((jlast + 1))
		# (if they wait at step $best and the round before it combined
		# this peer, its share of the data there is still its own: no
		# peer reassigned it, the share following the rounds' member
		# sets; it joins at that step, mid-epoch.  Rounded up to the
		# epoch's first step, it would wait for them there while they
		# wait for it here: each launch of theirs would end 75, 'a
		# minority alive', and the run would never end)
		if [ "$still" -eq 1 ] && [ "$xh" -eq 0 ] && [ "$best" -gt 0 ] &&
		    SPIRT_TIMEOUT=10s spirt-store -s "$src" get \
		    "gagg/$((best - 1))/round" 2>/dev/null |
		    grep -a -q "^peer=$self used\$"; then
			j=$best
		else
			j=$(( (j + jr - 1) / jr * jr ))
		fi
		if [ "$j" -ge "$stop" ]; then
			# the run ends before: its last model, once it is there
			jlast=$stop
			beater --status catchup -t "$stop"
			join_fetch "$stop" || continue
			say "the run ended before this peer could join: it has the others' model/$model@$stop"
			t=$stop joining=0
			# (its beats say so: the others, serving till then, end)
			beater -m "$model"
			return 0
		fi
		jlast=$j
		beater --status catchup -t "$j"
		say "joining at step $j (the most advanced peer, $srcid, is at $best)"
		join_fetch "$j" && break
		jmargin=$((jmargin * 2))
	done
	t=$j
}
# join_fetch J: model@J and opt@J from $src into this store, once $src
# has them; 1 if $src went past step J's round first (the join missed)
# or died (another is asked)
join_fetch() {
	cu=$(mktemp -d "${gdir:-${TMPDIR:-/tmp}}/catchup.XXXXXX") ||
	    die 73 "joining: cannot make a directory in ${gdir:-${TMPDIR:-/tmp}}"
	seen=$best pend=$(($(now) + deadline * 1000000)) i=0 rc=1
	while :; do
		if spirt-store -s "$src" get -f "model/$model@$1" \
		    >"$cu/m" 2>/dev/null; then
			# (either gone meanwhile, or $src past J: too late)
			spirt-store -s "$src" get -f "opt/$model@$1" \
			    >"$cu/o" 2>/dev/null && ! src_past "$1" && rc=0
			break
		fi
		i=$((i + 1))
		if [ $((i % 10)) -eq 0 ]; then
			src_past "$1" && break
			if [ "$(now)" -ge "$pend" ]; then
				rm -rf "$cu"
				die 75 "joining: $srcid did not go on in $deadline ms (--deadline); rerun to retry"
			fi
		fi
		sleep 0.05
	done
	if [ "$rc" -ne 0 ]; then
		rm -rf "$cu"
		return 1
	fi
	# (the optimiser state first: a model's newest version is whole)
	if spirt-store ls "model/$model@$1" | grep -q .; then
		rm -rf "$cu"
	elif run spirt-store -q put "opt/$model@$1" "$cu/o" &&
	    run spirt-store -q put "model/$model@$1" "$cu/m"; then
		rm -rf "$cu"
		say "caught up from $src: model/$model@$1 (this peer had @$last)"
	else
		rm -rf "$cu"
		die 74 "joining: could not store model/$model@$1"
	fi
	last=$1
	redo_from "$1"
}
# src_past J: $src is dead, or past step J's round, by its beats here
# (their step is its newest model's); $seen and $pend follow its steps
src_past() {
	hs=$(spirt-beat ls | awk -F'\t' -v id="$srcid" \
	    '$1 == id { print $3, $5 }')
	case $hs in dead\ *) return 0 ;; esac
	hstep=${hs#* }
	case $hstep in ''|*[!0-9]*) return 1 ;; esac
	[ "$hstep" -lt $(($1 + xu)) ] || return 0
	[ "$hstep" -eq "$seen" ] ||
	    seen=$hstep pend=$(($(now) + deadline * 1000000))
	return 1
}
# join_check T: after the exchange of step T while joining: the round's
# record names this peer a member (it joined: it beats as live), or the
# others left it out (it joins again further ahead, once step T is done)
join_check() {
	[ "$joining" -eq 1 ] || return 0
	if spirt-store get "gagg/$1/round" 2>/dev/null |
	    grep -a -q "^peer=$self self\$"; then
		joining=0
		beater -m "$model"
		say "rejoined at step $1: its model checked against the others' digests, it beats as live"
	else
		jmargin=$((jmargin * 2))
		say "joining: the others left this peer out of step $1; it joins again further on"
	fi
}
beats_stop() {
	[ -n "$beatpids" ] || return 0
	# (SIGTERM: the beater's last beat says it stops; a run that is
	# done falls silent instead, so that a peer a step behind still
	# counts it for the dead threshold's time, and finishes too)
	if [ "${done_:-0}" -eq 1 ]; then
		kill -KILL $beatpids 2>/dev/null || :
	else
		kill -TERM $beatpids 2>/dev/null || :
	fi
	for p in $beatpids; do wait "$p" 2>/dev/null || :; done
	beatpids=
}

# ---- the exchange with the other peers: one warm spirt-peer exchange
# -i for the run (its sessions kept, its pulls waiting on the others'
# servers), fed step lines through spirt-run ("post": it keeps its own
# --deadline); with --cold, one spirt-peer exchange per round ----
xwarm=
# xwarm_start: the warm exchange, among the warm tools under spirt-run
# (with no deadline of spirt-run's: it keeps --deadline itself)
xwarm_start() {
	{ [ -n "$xch" ] && [ -z "$bpeer" ]; } || return 0
	echo "start xch $xch -i $xsrc" >&3
	xwarm=1
}
# xstep T WHAT: the round of step T: its exit code (the warm answer's
# error=, or the cold process's) ends the run; WHAT names the round.
# With --beat, a round short of members (75: members died or restarted
# during it) is run again, up to 3 times, after a beat's pause
xstep() {
	xtries=0
	while :; do
		r=0
		xstep1 "$@" || r=$?
		[ "$r" -eq 2 ] || return "$r"
		sleep "$(seconds $((beat * 1000000)))"
	done
}
xall=
xstep1() {
	xall=
	if [ -z "$xwarm" ]; then
		rc=0
		run $xch $xsrc -t "$1" || rc=$?
		[ "$rc" -eq 0 ] || { xfailed "$rc" "$2" || return $?; }
		return 0
	fi
	[ "$verbose" -eq 0 ] || printf '+ %s -i %s <<< %s\n' "$xch" "$xsrc" "$1" >&2
	echo "post xch $1" >&3
	while :; do
		read -r ack <&9 || die 70 "spirt-run went away"
		case $ack in
		"answer xch "*error=*)
			rc=${ack##*error=}
			xfailed "$rc" "$2" || return $? ;;
		"answer xch step=$1 used="*)
			# (every member's aggregate in, this peer's too:
			# peerout has nothing to read in its record)
			_u=${ack#*used=} _n=${ack#*peers=}
			[ "${_u%% *}" != "${_n%% *}" ] || xall=$1 ;;
		"answer xch "*) ;;
		*) aside "$2"; continue ;;
		esac
		break
	done
}
# xfailed CODE WHAT: a round that failed ends the run, unless this peer
# is joining (returns 1: it joins again further on), or it is short of
# members with --beat (returns 2: the round again, up to 3 times)
xfailed() {
	if [ "$1" -eq 75 ] && [ "$beat" -gt 0 ] && [ "$joining" -eq 0 ] &&
	    [ "$xtries" -lt 3 ]; then
		xtries=$((xtries + 1))
		say "$2 failed (spirt-peer exit 75); the round again ($xtries of 3)"
		return 2
	fi
	[ "$joining" -eq 1 ] || die "$1" "$2 failed (spirt-peer exit $1)"
	jmargin=$((jmargin * 2))
	say "joining: $2 failed (spirt-peer exit $1); it joins again further on"
	return 1
}

# ---- the guard, and the cleanup of what the driver started ----
work= srv= srvdir= guard= gfile= gdir=
# guarded: the server's and the beaters' pids, for the guard
guarded() {
	[ -n "$gfile" ] || return 0
	echo "${srv:-} ${bsrv:-} $beatpids" >"$gfile.tmp" && mv "$gfile.tmp" "$gfile"
}
# orphaned: true in a subshell of the driver (a timer) whose
# driver is gone, killed outright (no trap ran): it is another process's
# child now, and the pids it was to end may be others' by now (a pid is
# reused once the kernel's pids wrap: 32768 of them on many machines).
# The parent from /proc (the driver's pid cannot be reused while this
# is its child); without /proc, whether $$ is there
orphaned() {
	_o=
	read -r _o </proc/self/stat 2>/dev/null ||
	    { ! kill -0 $$ 2>/dev/null; return; }
	_o=${_o##*) }
	# shellcheck disable=SC2086
	set -- $_o
	[ "$2" != "$$" ]
}
# guard_start: a driver killed outright (SIGKILL: no trap runs) leaves
# no server or beater behind: the guard, once a second, ends them once
# the driver is gone (the beaters with a last word: the others see this
# peer stopped at once, and the same command started again can listen).
# And one of them that dies (killed, a crash) would leave a peer nobody
# can pull from, or whose watcher hears no one: the guard names it in
# $gfile.died and ends the run (SIGTERM: 75, rerun to resume)
guard_start() {
	[ -n "$peers" ] || return 0
	# (its directory holds what a killed driver would leave: the guard
	# removes it, the server's and the catch-up's files with it)
	gdir=$(mktemp -d "${TMPDIR:-/tmp}/spirt-peer.XXXXXX") ||
	    die 73 "cannot make a directory in ${TMPDIR:-/tmp}"
	gfile=$gdir/guard
	(
		set +e          # (a kill of one gone, a file gone: go on)
		trap '' INT TERM
		_told=0
		while kill -0 $$ 2>/dev/null; do
			sleep 1
			[ "$_told" -eq 0 ] || continue
			for _p in $(cat "$gfile" 2>/dev/null); do
				_st=Z
				[ ! -r "/proc/$_p/stat" ] ||
				    read -r _ _ _st _ <"/proc/$_p/stat" 2>/dev/null
				[ "$_st" = Z ] || continue
				# (still listed: not one the driver replaced)
				case " $(cat "$gfile" 2>/dev/null) " in
				*" $_p "*) ;;
				*) continue ;;
				esac
				echo "$_p" >"$gfile.died"
				kill -TERM $$ 2>/dev/null
				_told=1
				break
			done
		done
		_g=$(cat "$gfile" 2>/dev/null)
		# (spirt-run too, which ends the warm tools: its SPIRT_PARENT
		# does first, on Linux)
		# shellcheck disable=SC2046
		kill -TERM $(cat "$gfile.k" 2>/dev/null) 2>/dev/null
		# shellcheck disable=SC2086
		kill -TERM $_g 2>/dev/null
		# (a server finishing the long polls under way may take
		# seconds: it is killed after one, as the port is wanted)
		sleep 1
		# shellcheck disable=SC2086
		kill -KILL $_g 2>/dev/null
		rm -rf "$gdir"
	) </dev/null >/dev/null 2>&1 &
	guard=$!
}
cleanup() {
	[ -z "$guard" ] || kill -KILL "$guard" 2>/dev/null || :
	guard=
	[ -z "$gfile" ] || rm -f "$gfile" "$gfile.tmp" "$gfile.died" \
	    "$gfile.k" "$gfile.k.tmp"
	gfile=
	[ -z "${sup:-}" ] || kill "$sup" 2>/dev/null || :
	sup=
	[ -z "$work" ] || rm -rf "$work"
	work=
	[ -z "$srv" ] || { kill -TERM "$srv" 2>/dev/null || :; wait "$srv" || :; }
	srv=
	[ -z "${bsrv:-}" ] || { kill -TERM "$bsrv" 2>/dev/null || :; wait "$bsrv" || :; }
	bsrv=
	[ -z "$srvdir" ] || rm -rf "$srvdir"
	srvdir=
	[ -z "$gdir" ] || rm -rf "$gdir"
	gdir=
	beats_stop
	[ -z "${bpid:-}" ] || kill "$bpid" 2>/dev/null || :
	bpid=
}
trap 'cleanup' EXIT
trap 'cleanup; trap - INT; kill -INT $$' INT
# (SIGTERM from the guard: this peer's server or a beater died)
termed() {
	_d=
	[ -z "$gfile" ] || [ ! -s "$gfile.died" ] || _d=$(cat "$gfile.died")
	if [ -n "$_d" ]; then
		_w="spirt-beat"
		[ "$_d" != "$srv" ] || _w="spirt-peer serve"
		[ "$_d" != "$bsrv" ] || _w="spirt-peer serve of $bfork"
		cleanup
		trap - EXIT
		die 75 "this peer's $_w (pid $_d) died; rerun to resume"
	fi
	cleanup
	trap - TERM
	kill -TERM $$
}
trap 'termed' TERM

# alive PID: a tool of the driver's runs.  A dead one the driver has not
# reaped yet is a zombie, which kill -0 still finds: /proc tells.
alive() {
	if [ -r "/proc/$1/stat" ]; then
		read -r _ _ st _ <"/proc/$1/stat" 2>/dev/null &&
		    [ "$st" != Z ]
	else
		kill -0 "$1" 2>/dev/null
	fi
}

# ---- peers over HTTP: a peer whose own line is http://[ID@]host:port
# serves its store there for the run (spirt-peer serve, with the same
# SPIRT_KEY, SPIRT_TOKEN, SPIRT_GROUP, SPIRT_ALLOW as the exchange) ----
# serve_ready: the address line of the server $srv, within --deadline:
# a server that neither says it listens nor exits (a store it waits for,
# a stopped process) is killed, and the run stops with 75
# (the timer ends on the file "up", written once the read returns, not
# on the TERM alone: dash drops a signal that reaches a subshell before
# it has set its trap, 198 times in 200 when sent at once after the
# fork; on a loaded machine the read can return that soon, and the
# timer, deaf, killed a server that had said it listens: tests/56-failures,
# "a peer back after the others' last step", 1 CI run in about 15;
# and the TERM is sent only once the timer says its trap is set, the
# file "tready": else a lost TERM kept
# the driver waiting for the timer's next look at "up", up to 1 s)
serve_ready() {
	rm -f "$srvdir/up" "$srvdir/tready"
	(
		trap 'exit 0' TERM
		: >"$srvdir/tready"
		s=$(((deadline + 999) / 1000))
		while [ "$s" -gt 0 ]; do
			sleep 1 & wait $! 2>/dev/null
			[ ! -e "$srvdir/up" ] || exit 0
			s=$((s - 1))
			# (its driver killed outright: the server's pid may be
			# another's by now)
			! orphaned || exit 0
		done
		[ ! -e "$srvdir/up" ] || exit 0
		echo late >"$srvdir/late"
		kill -TERM "$srv" 2>/dev/null
		sleep 2 & wait $! 2>/dev/null
		! orphaned || exit 0
		kill -KILL "$srv" 2>/dev/null
	) </dev/null >/dev/null 2>&1 5<&- &
	timer=$!
	addr=
	# (a read before the server's shell has opened the FIFO finds no
	# writer there: end of file at once, the server alive: read again)
	while ! read -r addr <&5 && [ -z "$addr" ] &&
	    [ ! -e "$srvdir/late" ] && alive "$srv"; do
		sleep 0.05
	done
	exec 5<&-
	: >"$srvdir/up"
	while [ ! -e "$srvdir/tready" ] && alive "$timer"; do
		sleep 0.01
	done
	kill -TERM "$timer" 2>/dev/null || :
	wait "$timer" 2>/dev/null || :
	[ -n "$addr" ] && [ ! -e "$srvdir/late" ] && return 0
	wait "$srv" 2>/dev/null || :
	srv=
	[ ! -e "$srvdir/late" ] ||
		die 75 "--peers $peers: spirt-peer serve did not say it listens on $listen within $deadline ms (--deadline)"
	# (the same command run again at once: the server of the run
	# before, whose driver was killed, may hold the port a moment yet)
	[ "$(now)" -ge "$send" ] || return 1
	die 69 "--peers $peers: cannot serve $store on $listen"
}
# serve_start: spirt-peer serve for the run, asked again for --deadline
# while it cannot listen
serve_start() {
	# (at least 10 s: a killed driver's server answers the long polls it
	# holds before it lets go of the port, for up to 5 s; chaos saw a
	# --deadline of 5 s run out, 69)
	_sd=$deadline
	[ "$_sd" -ge 10000 ] || _sd=10000
	send=$(($(now) + _sd * 1000000))
	while :; do
		# (not through run: $! must be the server itself)
		[ "$verbose" -eq 0 ] ||
		    printf '+ spirt-peer serve -s %s -l %s\n' "$store" "$listen" >&2
		# The FIFO's read end first, on fd 5 (opened read-write a
		# moment, so that the read-only open has a writer and does
		# not wait).  The forked shell's write-only open then has a
		# reader at once, its own copy of fd 5 among them: opened
		# after the fork, as before, it waited for the driver's, and
		# a driver killed in between left that shell waiting for good,
		# an orphan no guard knew (chaos, 1 CI run in many).  Opened
		# read-write in the shell instead, a line the server wrote
		# before the driver opened the FIFO was lost with the FIFO's
		# last close (the driver then waited for --deadline).  Only
		# the server writes: its exit is the driver's end of file
		# (and a read before its shell opened the FIFO: serve_ready
		# reads again while the server lives).
		exec 6<>"$srvdir/ready" 5<"$srvdir/ready" 6>&-
		SPIRT_PARENT=$$ spirt-peer serve -s "$store" -l "$listen" -F 3 \
		    3>"$srvdir/ready" 5<&- &
		srv=$!
		# (listed for the guard once it listens: one that cannot,
		# and exits, is no death)
		serve_ready && { guarded; return 0; }
		sleep 0.2
	done
}

# fork_serve: --byzantine peer:equivocate@HOST:PORT:A (evaluation
# only): the other story's store, STORE.fork (made at once, with the
# model it starts from, so that it can be served from the first step),
# served at HOST:PORT by a second spirt-peer serve under this peer's
# identity, as serve_start serves the store (its own FIFO; the guard
# ends it with the driver, and the run when it dies)
fork_serve() {
	if [ ! -d "$bfork" ]; then
		rm -rf "$bfork.tmp"
		spirt-store get "model/$model@$last" >"$store.byz-model.rec" &&
		    spirt-store -s "$bfork.tmp" put "model/$model@$last" \
		    "$store.byz-model.rec" && mv "$bfork.tmp" "$bfork" ||
		    die 74 "$bfork: could not make the other story's store"
	fi
	_s=$srv _st=$store _l=$listen _sdir=$srvdir
	store=$bfork listen=$bflisten srvdir=$gdir/fork
	mkdir "$srvdir" && mkfifo "$srvdir/ready" ||
	    die 73 "cannot make $srvdir"
	serve_start
	bsrv=$srv srv=$_s store=$_st listen=$_l srvdir=$_sdir
	guarded
}

# urls: the other peers' http:// URLs
urls=
guard_start
if [ -n "$peers" ]; then
	selfurl=$(awk -v p="$peer" '/^[[:space:]]*[^#[:space:]]/ {
		if (n++ == p) { print $2; exit } }' "$peers")
	urls=$(awk -v p="$peer" '/^[[:space:]]*[^#[:space:]]/ {
		if (n++ != p && $2 ~ /^http:\/\//) print $2 }' "$peers")
	case $selfurl in
	http://*)
		listen=${selfurl#http://} listen=${listen#*@} listen=${listen%/}
		srvdir=$gdir/serve
		mkdir "$srvdir" && mkfifo "$srvdir/ready" ||
		    die 73 "cannot make $srvdir"
		serve_start
		[ -z "$bflisten" ] || fork_serve
		;;
	esac
fi
beats_start
# ---- the warm tools and the cold functions run under spirt-run
# (spirt-run(1)): it starts them, relays the driver's requests (fd 3) to
# them and their answers back (fd 9), one line each, kills one that does
# not answer (warm) or end (cold) within --deadline (CLOCK_MONOTONIC:
# "late NAME"), says how one ended ("died NAME"), and ends them all when
# the driver ends, even killed outright (SPIRT_PARENT).  Names: g0 ..
# gM-1 the warm functions, c0 .. cM-1 the cold ones, agg, upd, xch ----
sup=
# fn_start W: function W's warm process
fn_start() {
	echo "start g$1 $fncmd -q --serve -m $model -w $((w0 + $1)) -b $batch -S $seed $(flip "$1")" >&3
}
work=$(mktemp -d "${TMPDIR:-/tmp}/spirt-train.XXXXXX")
# (<>: the driver's ends opened first, without waiting, so that
# spirt-run's open at once; they never see end of file or SIGPIPE)
mkfifo "$work/rq" "$work/an"
exec 3<>"$work/rq" 9<>"$work/an"
SPIRT_PARENT=$$ spirt-run -d "$deadline" <"$work/rq" >"$work/an" 3>&- 9<&- &
sup=$!
# (for the guard, which ends it if the driver is gone)
[ -z "$gfile" ] || { echo "$sup" >"$gfile.k.tmp" &&
    mv "$gfile.k.tmp" "$gfile.k"; } || :
if [ "$cold" -eq 0 ]; then
	w=0
	while [ "$w" -lt "$fns" ]; do
		fn_start "$w"
		w=$((w + 1))
	done
	echo "start agg $agg --serve" >&3
	echo "start upd $upd --serve" >&3
	xwarm_start
fi

# died NAME:pid=P:HOW: $how, what became of warm tool NAME (HOW from
# spirt-run: status=S, signal=N, or ms=M when it was late and killed)
died() {
	_n=${1%%:*} _h=${1#*:}
	_p=${_h%%:*} _h=${_h#*:}
	case $_h in
	signal=*) how="was killed by signal ${_h#signal=}" ;;
	status=*) how="exited with status ${_h#status=}" ;;
	*) how="did not answer within --deadline $deadline ms" ;;
	esac
	case $_n in
	g*) _n="$fncmd -w $((w0 + ${_n#g}))" ;;
	agg) _n=spirt-agg ;;
	upd) _n=spirt-update ;;
	xch) _n=spirt-peer ;;
	esac
	how="warm $_n (pid ${_p#pid=}) $how"
}
# ended: $_e, spirt-run's line $ack of a tool's end as NAME:pid=P:HOW
ended() {
	_e=${ack#* }
	_n=${_e%% *} _e=${_e#* }
	_e=$_n:${_e%% *}:${_e#* }
}
# aside WHAT: $ack, no answer to the wait under way: a function's end is
# dealt with at the next step (later); another tool's ends the run.  A
# request to a tool that has ended since is refused (69), after the line
# of its end: no news
aside() {
	case $ack in
	"died g"*|"late g"*) ended; later="$later$_e " ;;
	"refused 69 send "*": not running") ;;
	"died "*|"late "*)
		ended
		died "$_e"
		# (the exchange's end, told while the step waited for another
		# tool: named as in its own wait)
		case $_e:$1 in
		xch:*exchange*|[!x]*|x[!c]*) set -- "$1: $how" ;;
		*) set -- "$1: exchange: $how" ;;
		esac
		die 75 "$1; rerun to resume" ;;
	*) die 70 "$1: an answer out of turn: ${ack#answer * }" ;;
	esac
}

# wait_done N TOOL: read N answers of spirt-agg or spirt-update; fail on
# an error= line
wait_done() {
	i=0
	while [ "$i" -lt "$1" ]; do
		read -r ack <&9 || die 70 "spirt-run went away"
		case $ack in
		"late agg "*|"late upd "*)
			die 75 "step $t: no answer from $2 within --deadline $deadline ms; rerun to resume" ;;
		"answer "*error=*) _a=${ack#answer }; die 75 "step $t: ${_a#* }" ;;
		"answer agg "*|"answer upd "*) i=$((i + 1)) ;;
		*) aside "step $t" ;;
		esac
	done
}

# ---- workers within a peer (docs/contracts.md, The assignment) ----
# A function that dies (its warm process ends, or a cold invocation
# fails) is declared dead at once: its samples go to the live functions
# from that step on (spirt-shard -t T --live: revision r+1, the rest of
# the epoch and the map from the next), the survivors compute the step
# again under it (the gradients of r are stale: spirt-agg leaves them
# out), and training goes on.  At the next epoch's first step it starts
# again and gets work back (spirt-shard --epoch E --live).  Functions are
# numbered 0..M-1 here; the store's workers are w0 + w.  The other peers'
# workers stay as the store's full part has them, but those of a peer
# out of a round (--beat: peerout).
live=$(seq 0 $((fns - 1)) | tr '\n' ' ') dead= later= ruleok=$fns
# (no $(...) on the way of a step: each would cost a process)
has() { case " $1 " in *" $2 "*) return 0 ;; esac; return 1; }
drop() {        # drop VAR X: X out of the list in variable VAR
	eval "_dl=\$$1"
	_dr=
	for _dx in $_dl; do [ "$_dx" = "$2" ] || _dr="$_dr$_dx "; done
	eval "$1=\$_dr"
}
# livelist: the store's live workers, comma-separated: this peer's live
# functions, and the other peers' workers (oall), but those of peers out
# of the map for the rest of the epoch (pdead: peerout)
pdead= oall=
_x=0
while [ "$_x" -lt "$nw" ]; do
	[ "$_x" -ge "$w0" ] && [ "$_x" -lt $((w0 + fns)) ] || oall="$oall$_x "
	_x=$((_x + 1))
done
livelist() {
	_l= _i=0
	while [ "$_i" -lt "$fns" ]; do
		has "$dead" "$_i" || _l="$_l${_l:+,}$((w0 + _i))"
		_i=$((_i + 1))
	done
	for _x in $oall; do
		has "$pdead" "$_x" || _l="$_l${_l:+,}$_x"
	done
	printf '%s' "$_l"
}
# assign_read: which of this peer's functions hold a list: in the rest
# part (epoch as_re from its step as_rj, 0: none) and the full part (from
# epoch as_fe), from spirt-shard --list
assign_read() {
	_a=$(spirt-shard -d "$train" --list) ||
		die 65 "data/$train/assign: cannot read it"
	as_rev=$(printf '%s\n' "$_a" | sed -n '1s/^revision //p')
	eval "$(printf '%s\n' "$_a" | awk -v w0="$w0" -v m="$fns" '
		$1 == "assign" && $3 >= w0 && $3 < w0 + m {
			w = $3 - w0
			if ($13 > 0) {
				re = $11; rj = $13
				if (!(w in r)) { r[w] = 1; rl = rl " " w }
			} else {
				fe = $11
				if (!(w in f)) { f[w] = 1; fl = fl " " w }
			}
		}
		$1 == "assign" && ($3 < w0 || $3 >= w0 + m) && $13 == 0 &&
		    !($3 in o) { o[$3] = 1; ol = ol " " $3 }
		END { printf "as_re=%d as_rj=%d as_fe=%d as_rest=\"%s\" as_full=\"%s\" as_ofull=\"%s\"\n",
		    re, rj, fe, rl, fl, ol }')"
}
assign_read
# pdead_map: pdead as the store's map has it: the other peers' workers
# its full part holds out, as its last reassignment left them, until the
# next epoch (a resumed run; a revision that holds again)
pdead_map() {
	pdead=
	for _x in $oall; do has "$as_ofull" "$_x" || pdead="$pdead$_x "; done
}
pdead_map
# redo_from T: the steps from T are done (again) on this model: a run
# that starts at its newest version, a peer that joins at the others'
# step.  A revision of the assignment made at a later step belongs to a
# timeline this model is not on (a power loss undid the volatile
# versions after it; a rejoiner's own store went further than the step
# the others stand at): the revision that held at T holds again
# (spirt-shard --redo; nothing changes when the current one holds).  A
# function dead in this run that the revision gives samples at T gives
# them to the live ones at once, as when it died
redo_from() {
	rc=0
	run spirt-shard -q -d "$train" --redo -t "$1" -b "$batch" || rc=$?
	[ "$rc" -eq 0 ] || die "$rc" "step $1: no assignment revision of this step is kept (data/$train/assign)"
	_rev=$as_rev
	assign_read
	[ "$as_rev" = "$_rev" ] || {
		tell "step $1: done again: the assignment that held there holds again (revision $as_rev)"
		pdead_map
		[ $(($1 % spe)) -ne 0 ] || return 0
		holders "$1"
		for _x in $dead; do
			has "$_h" "$_x" || continue
			reassign "$1"
			return 0
		done
	}
}
# holders T: $_h, the functions with samples at step T
holders() {
	_e=$(($1 / spe)) _j=$(($1 % spe)) _h=
	if [ "$as_rj" -gt 0 ] && [ "$_e" -eq "$as_re" ] && [ "$_j" -ge "$as_rj" ]; then
		_h=$as_rest
	elif [ "$_e" -ge "$as_fe" ]; then
		_h=$as_full
	fi
}
# reassign T: the next revision for the live functions, from step T (an
# epoch's first step: from that epoch)
reassign() {
	[ -n "$live" ] || die 75 "step $1: every function is dead; rerun to resume"
	if [ $(($1 % spe)) -eq 0 ]; then
		_at="--epoch $(($1 / spe))"
	else
		_at="-t $1 -b $batch"
	fi
	rc=0
	run spirt-shard -q -d "$train" $_at --group "$fns" \
	    --live "$(livelist)" || rc=$?
	[ "$rc" -eq 0 ] || die "$rc" "step $1: could not reassign the samples of functions$(printf ' %s' $dead)"
	assign_read
}
# (the run's first step: as it is done again, the revision of its step)
redo_from "$last"
# rulefor N: the rule holds for N gradients, else stop saying why
rulefor() {
	[ "$1" -ne "$ruleok" ] || return 0
	rc=0
	e=$(spirt-agg $aggargs --check-rule "$1" 2>&1) || rc=$?
	[ "$rc" -lt 126 ] || rc=70
	[ "$rc" -eq 0 ] || die "$rc" "step $t: $1 functions left: -a $rule: $(first "$e" spirt-agg)"
	ruleok=$1
}
# declare_dead W HOW: function W is dead, HOW says how it ended
declare_dead() {
	drop live "$1"
	dead="$dead$1 "
	tell "step $t: $2: declared dead; its samples go to the other functions"
}
# bury NAME:pid=P:HOW: a warm function that ended, or was late (ended)
bury() {
	died "$1"
	_n=${1%%:*}
	declare_dead "${_n#g}" "$how"
}
# busy T: $busy the live functions with samples at step T, $n of them
busy() {
	busy= n=0
	holders "$1"
	for _x in $_h; do
		has "$live" "$_x" || continue
		busy="$busy$_x " n=$((n + 1))
	done
	[ "$n" -gt 0 ] || die 75 "step $1: no live function has samples (functions$(printf ' %s' $dead) dead); rerun to resume"
	rulefor "$n"
}
# again T: after deaths during step T, the samples reassigned from T
again() {
	reassign "$1"
	busy "$1"
	tell "step $1: revision $as_rev: functions$(printf ' %s' $busy) compute it again"
}
# grads T: the gradients of step T, the live functions' with samples;
# when one dies meanwhile, or does not answer within --deadline (then
# spirt-run has ended it: nothing it writes later counts as work), it is
# declared dead and the survivors compute the step again under the new
# revision
grads() {
	if [ -n "$later" ]; then
		for _d in $later; do bury "$_d"; done
		later=
		reassign "$1"
	fi
	while :; do
		busy "$1"
		for _x in $busy; do echo "send g$_x $1" >&3; done
		_pend=$busy _gone=0
		while [ -n "$_pend" ]; do
			read -r ack <&9 || die 70 "spirt-run went away"
			case $ack in
			"died g"*|"late g"*)
				ended
				bury "$_e"
				_n=${_e%%:*}
				drop _pend "${_n#g}"
				_gone=1 ;;
			"answer g"*error=*)
				_a=${ack#answer }
				die 75 "step $1: ${_a#* }" ;;
			"answer g"*" step=$1 worker="*)
				_x=${ack#answer g}
				drop _pend "${_x%% *}" ;;
			*) aside "step $1" ;;
			esac
		done
		[ "$_gone" -eq 1 ] || return 0
		again "$1"
	done
}
# fan_grads T: with SPIRT_FANOUT, step T's busy functions through it.
# The runner has its own retries (parallel --retries): if it fails, the
# step fails (75), nothing of it applied, and a rerun resumes.
fan_grads() {
	# ($fanout's words are split, never globbed)
	set -f
	for _x in $busy; do echo $((w0 + _x)); done | run $fanout \
	    $fncmd -q -m "$model" -t "$1" -w {} -b "$batch" \
	    -S "$seed" || die 75 "step $1: a gradient function failed"
	set +f
}
# cold_grads T: the same with one process per invocation, each a "run"
# of spirt-run's: past --deadline from its start it is killed (late);
# one that fails is a dead function
cold_grads() {
	while :; do
		busy "$1"
		if [ -n "${SPIRT_FANOUT-}" ]; then
			fan_grads "$1"
			return 0
		fi
		for _x in $busy; do
			set -- "$1" "$fncmd -q -m $model -t $1 -w $((w0 + _x)) -b $batch -S $seed $(flip "$_x")"
			[ "$verbose" -eq 0 ] || printf '+ %s\n' "$2" >&2
			echo "run c$_x $2" >&3
		done
		_pend=$busy _gone=0
		while [ -n "$_pend" ]; do
			read -r ack <&9 || die 70 "spirt-run went away"
			case $ack in
			"died c"*" status=0") ;;
			"died c"*|"late c"*)
				ended
				cold_dead "$_e"
				_gone=1 ;;
			"answer c"*) continue ;;
			*) aside "step $1"; continue ;;
			esac
			_n=${ack#* c}
			drop _pend "${_n%% *}"
		done
		[ "$_gone" -eq 1 ] || return 0
		again "$1"
	done
}
# cold_dead NAME:pid=P:HOW: the cold function of NAME, cW, is dead
cold_dead() {
	_n=${1%%:*} _h=${1##*:}
	case $_h in
	signal=*) how="was killed by signal ${_h#signal=}" ;;
	status=*) how="exited with status ${_h#status=}" ;;
	*) how="did not end within --deadline $deadline ms" ;;
	esac
	declare_dead "${_n#c}" "cold $fncmd -w $((w0 + ${_n#c})) $how"
}
# peerout T: with --beat, before any gradient of step T, the peers' share
# of the data from the round just closed (that of step T-1; with --every
# H, of the round of H steps before T).  Every member of that round holds
# the same member set (all or nothing, from the signed digests; its
# record gagg/<r>/round names each peer used, and this one "self"), so
# every peer reassigns the same workers at the same step with no round
# of its own: those of a peer of the map that was not a member are out
# for the rest of the epoch, their samples from the round's first step
# on (none of their gradients since was applied) spread over the live
# ones from step T (spirt-shard -t T --since R --group).  At an epoch's
# first step every peer holds its own share again (back): the dead and
# the rejoined get theirs back there, and one still dead is out again
# after that step.  This peer, if the round left it out, is out too: it
# trains nothing until the next epoch's first step, where it joins again
# (join_prepare; it returns 1, the step not taken).
# (opeers: ID:W of each other peer, W its first worker)
opeers=
[ -z "$peers" ] || opeers=$(awk -v p="$peer" -v m="$fns" '
	/^[[:space:]]*[^#[:space:]]/ { if (n != p) printf "%s:%d ", $1, n * m
	n++ }' "$peers")
peerout() {
	[ "$beat" -gt 0 ] && [ -n "$peers" ] && [ "$joining" -eq 0 ] ||
	    return 0
	[ $(($1 % spe)) -ne 0 ] && [ $(($1 % xu)) -eq 0 ] &&
	    [ "$1" -ge "$xu" ] || return 0
	_r=$(($1 - xu)) _e=$(($1 / spe * spe))
	# (a round of every member, as its warm exchange said: no one out,
	# and no process to ask the record, 14% of a --beat run's CPU)
	[ "$xall" != "$_r" ] || return 0
	_rec=$(spirt-store get "gagg/$_r/round" 2>/dev/null |
	    tr -c '[:print:]\n' ' ')
	case $_rec in
	'') return 0 ;;         # (no round: nothing to go on)
	*"
peer=$self self"*) ;;
	*)
		tell "step $1: this peer was left out of the round of step $_r: its samples go to the others for the rest of epoch $(($1 / spe)); it joins again at an epoch's first step"
		joining=1 jmargin=0 jlast=$(($1 - 1))
		return 1 ;;
	esac
	_new= _ids=
	for _p in $opeers; do
		_id=${_p%:*} _w=${_p#*:}
		! has "$pdead" "$_w" || continue
		case $_rec in *"
peer=$_id used"*) continue ;; esac
		_i=0
		while [ "$_i" -lt "$fns" ]; do
			pdead="$pdead$((_w + _i)) " _new="$_new $((_w + _i))"
			_i=$((_i + 1))
		done
		_ids="$_ids $_id"
	done
	[ -n "$_new" ] || return 0
	[ "$_r" -ge "$_e" ] || _r=$_e
	rc=0
	run spirt-shard -q -d "$train" -t "$1" -b "$batch" --since "$_r" \
	    --group "$fns" --live "$(livelist)" || rc=$?
	[ "$rc" -eq 0 ] || die "$rc" "step $1: could not reassign the samples of peers$_ids"
	assign_read
	tell "step $1: peers$_ids out of the round of step $(($1 - xu)): their workers'$_new samples from step $_r go to the live ones (revision $as_rev)"
}
# back T: at an epoch's first step the dead functions start again and get
# work back, and a revision from this epoch holds every live one
back() {
	[ $(($1 % spe)) -eq 0 ] || return 0
	for _x in $dead; do
		[ "$cold" -eq 1 ] || fn_start "$_x"
		live="$live$_x "
		tell "epoch $(($1 / spe)) step $1: function $_x is back"
	done
	dead=
	# (and every other peer's share its own: peerout)
	[ -z "$pdead" ] ||
	    tell "epoch $(($1 / spe)) step $1: the workers$(printf ' %s' $pdead) of peers out of the last epoch get their samples back"
	pdead=
	holders "$1"
	for _x in $live; do
		has "$_h" "$_x" || { reassign "$1"; return 0; }
	done
	for _x in $oall; do
		has "$as_ofull" "$_x" || { reassign "$1"; return 0; }
	done
}

# exchange T: with --peers, the round of step T with the other peers; a
# peer whose model differs stops (65), a round short of peers is 75
exchange() {
	{ [ -n "$xch" ] && [ "$xh" -eq 0 ]; } || return 0
	if [ -n "$bpeer" ]; then
		# a Byzantine peer (evaluation only) goes on whatever its round
		# said: a cold round each step, its exit code no matter
		byzpeer_publish "$1"
		run $xch $xsrc -t "$1" || :
		byzpeer_after "$1"
	else
		# (a joining peer whose round failed joins again further on:
		# the step is not applied)
		xstep "$1" "step $1: exchange" || { stepped=0; return 0; }
	fi
	lastx=$1
}

# round T: with --every H, the step T that ends a round (its H-th local
# step, or the run's last) ends it: the step writes delta/S, the change
# since the round's first model model@S, not model@T+1; the peers
# exchange the deltas as the aggregates of step S; then the outer step
# model@T+1 = model@S - gagg/S (SGD with lr 1: the mean of the deltas
# makes it the mean of the peers' models).  model@S and model@T+1 are
# the same on every peer; the versions between are each peer's own.
# Both steps are requests to the warm spirt-update (its words delta=,
# outer=, agg=), as the local steps are: no process a round.
# Returns 1 when T ends no round (the caller updates as usual).
round() {
	[ "$xh" -gt 0 ] || return 1
	[ $((($1 + 1) % xh)) -eq 0 ] || [ $(($1 + 1)) -eq "$stop" ] || return 1
	s0=$(($1 / xh * xh))
	rstep "$1 delta=$s0" "step $1: the round's delta" -t "$1" --delta "$s0"
	xstep "$s0" "step $1: exchange of round $s0" || { stepped=0; return 0; }
	lastx=$s0
	join_check "$s0"
	set -- "$1" $(($1 + 1 - s0))
	rstep "$s0 outer=$2 agg=gagg" "step $1: the outer step of round $s0" \
	    -a gagg -t "$s0" --outer "$2"
	# spent rounds: those before the previous one (a peer a round behind
	# still finds it)
	if [ "$s0" -ge $((2 * xh)) ] && { [ "$xh" -ge 10 ] ||
	    [ $((s0 / xh % 10)) -eq 9 ]; }; then
		run spirt-store -q prune -t $((s0 - xh)) xagg/ gagg/ $spent \
		    delta/ || die 74 "step $1: could not prune spent rounds"
	fi
	return 0
}

# rstep WORDS WHAT OPTIONS...: one of a round's steps: the request WORDS
# to the warm spirt-update, or with --cold a spirt-update with OPTIONS
rstep() {
	_rq=$1 _what=$2
	shift 2
	if [ "$cold" -eq 1 ]; then
		run $upd "$@" || die 75 "$_what failed"
		return 0
	fi
	[ "$verbose" -eq 0 ] || printf '+ %s -i <<< %s\n' "$upd" "$_rq" >&2
	echo "send upd $_rq" >&3
	wait_done 1 spirt-update
}

# step T: one synchronous SPIRT round; $stepped is 0 after it if the
# round failed while this peer joins (nothing of it applied)
step() {
	peerout "$1" || { stepped=0; return 0; }
	back "$1"
	if [ "$cold" -eq 1 ]; then
		cold_grads "$1"
		attack "$1"
		run $agg -t "$1" || die 75 "step $1: aggregation failed"
		[ "$xh" -eq 0 ] || { round "$1" || run $upd -t "$1" ||
		    die 75 "step $1: update failed"; return; }
		exchange "$1"
		[ "$stepped" -eq 1 ] || return 0
		join_check "$1"
		run $upd -t "$1" || die 75 "step $1: update failed"
		return
	fi
	grads "$1"
	attack "$1"
	echo "send agg $1" >&3
	wait_done 1 spirt-agg
	aggloss=${ack##*loss=}
	[ "$xh" -eq 0 ] || ! round "$1" || return 0
	exchange "$1"
	[ "$stepped" -eq 1 ] || return 0
	join_check "$1"
	echo "send upd $1" >&3
	wait_done 1 spirt-update
}

# evaluate T: test loss and accuracy of model@T, logged.  The evaluation
# function ($evcmd, words split, never globbed) has --deadline to end; its
# answer must hold loss=L and accuracy=A lines (A from 0 to 1), or the
# training stops with 75 (spirt-function(7))
evaluate() {
	rc=0
	set -f
	e=$(timeout --foreground -s KILL "$(seconds $((deadline * 1000000)))" $evcmd -q -m "$model" \
	    -t "$1") || rc=$?
	set +f
	[ "$rc" -ne 137 ] || die 75 "step $1: $evcmd: no answer within --deadline $deadline ms; rerun to resume"
	[ "$rc" -eq 0 ] || die 75 "step $1: $evcmd exited with status $rc; rerun to resume"
	e=$(printf '%s\n' "$e" | awk -F= -v tg="$target" '
		function num(x) {
			return x ~ /^-?[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?$/
		}
		$1 == "loss" { l = $2 } $1 == "accuracy" { a = $2 }
		END {
			# (a model gone astray: a loss of nan or inf)
			if (!(num(l) || tolower(l) ~ /^[-+]?(nan|inf)/) ||
			    !num(a) || a + 0 < 0 || a + 0 > 1)
				exit 1
			print l, a, (tg > 0 && a >= tg)
		}') || die 75 "step $1: $evcmd: expected loss=L and accuracy=A lines (A from 0 to 1); rerun to resume"
	set -- "$1" $e
	acc=$3 reached=$4
	printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$clock" "$1" "$ep" "$loss" "$2" "$3" \
	    >> "$log"
	say "epoch $ep step $1: test loss $2, accuracy $3"
}

[ -t 2 ] && [ "$quiet" -eq 0 ] && tty=1
# the rule as run, and the malicious functions if any, named in the log
what="rule $rule"
[ "$bucket" -le 1 ] || what="$what, buckets of $bucket"
[ -z "$attack" ] || [ -n "$bpeer" ] || what="$what, byzantine functions $list: $attack (evaluation only)"
[ -n "$prule" ] && [ "$prule" = mean ] || what="$what, across peers $prule"
[ -z "$bpeer" ] || what="$what, byzantine peer: $bpeer (evaluation only)"
say "training $model ($spec) in $store: steps $last..$stop of $total, $fns functions x batch $batch, $opt lr $lr, $what"
# the clock in ns: the log's seconds go on from t0; evaluations are left
# out; shell arithmetic only, since every process here costs a millisecond
t0=$(awk -v s="$t0" 'BEGIN { printf "%.0f", s * 1e9 }')
start=$(now) evalns=0 loss=- acc=0 lastp=$start aggloss=- reached=0
# progress and log every tick steps; the spent gradients go at every step
# (spirt-agg -P), old model versions too (spirt-update --keep)
tick=10
[ "$cold" -eq 1 ] || tick=50

t=$last
clock=$(seconds "$t0")
while [ "$t" -lt "$stop" ]; do
	join_prepare
	[ "$t" -lt "$stop" ] || break
	stepped=1
	step "$t"
	# (a joining peer's step whose round failed: it joins again)
	[ "$stepped" -eq 1 ] || continue
	# (spirt-run has its FIFOs open once it has answered the step's
	# functions: their names go, so that a driver killed outright leaves
	# nothing in TMPDIR)
	[ -z "$work" ] || [ -n "${SPIRT_FANOUT-}" ] || { rm -rf "$work"; work=; }
	t=$((t + 1))
	[ $((t % tick)) -eq 0 ] || [ $((t % every)) -eq 0 ] ||
	    [ "$t" -eq "$stop" ] || continue
	n=$(now)
	if [ "$cold" -eq 1 ]; then
		_k=agg/$((t - 1))
		[ "$aggkey" = agg ] || _k=xagg/$((t - 1))/$self
		loss=$(spirt-store show "$_k" | sed -n 's/^loss=//p')
	else
		loss=$aggloss
	fi
	c=$((t0 + n - start - evalns))
	clock=$(seconds "$c") ep=$(seconds $((t * 1000000000 / spe)))
	# every 2 s a progress line (a bar on a terminal)
	if [ "$quiet" -eq 0 ] && [ $((n - lastp)) -ge 2000000000 ]; then
		lastp=$n
		awk -v t="$t" -v T="$stop" -v e="$spe" -v l="$loss" \
		    -v r="$(( (t - last) * batch * fns * 1000 / ((c - t0) / 1000000 + 1) ))" \
		    -v tty="$tty" 'BEGIN {
			line = sprintf("epoch %.2f step %d/%d loss %s %.0f samples/s",
			    t / e, t, T, l, r)
			if (tty) {
				w = 30; f = int(w * t / T); bar = ""
				for (i = 0; i < w; i++)
					bar = bar (i < f ? "#" : ".")
				printf "\r[%s] %3d%% %s ", bar, 100 * t / T,
				    line > "/dev/stderr"
			} else
				print "spirt-train: " line > "/dev/stderr"
		}'
	fi
	if [ $((t % every)) -ne 0 ] && [ "$t" -ne "$stop" ]; then
		printf '%s\t%s\t%s\t%s\t-\t-\n' "$clock" "$t" "$ep" "$loss" >> "$log"
		continue
	fi
	evaluate "$t"
	evalns=$((evalns + $(now) - n))
	if [ "$reached" -eq 1 ]; then
		say "reached accuracy $acc >= $target at step $t, ${clock}s"
		break
	fi
done
[ "$tty" -eq 0 ] || printf '\r\033[K' >&2
# serving: the others may still pull our last round; stop once each has
# combined it (its gagg/<lastx>: the last step's, or with --every the
# last round's first step's, which is what the round is named by), or
# after --deadline, or once its server is gone.  With --beat, once each
# other peer the watcher saw beats this step or a later one (it has the
# last model) and is not joining: one behind (restarted after it died,
# even after its last round: it has that gagg and not the model) catches
# up from the peers that serve, and once they all ended there would be
# no one to catch up from.  A member that does not come back costs that
# wait, as one that does not answer does without --beat.
if [ -n "$srv" ] && [ "$t" -gt 0 ]; then
	end=$(($(now) + deadline * 1000000))
	if [ "$beat" -gt 0 ]; then
		while [ "$(now)" -lt "$end" ] &&
		    spirt-beat ls 2>/dev/null | awk -F'\t' -v me="$self" \
		    -v t="$t" '$1 != me && $2 == "peer" && ($3 == "joining" ||
			$5 == "-" || $5 + 0 < t) { b = 1 }
			END { exit !b }'; do
			sleep 0.2
		done
	elif [ -n "$lastx" ]; then
		# (69: no server there any more: that peer ended, having
		# combined the round, or died, and waiting would not help it;
		# the slowest peer to end would otherwise wait for --deadline
		# on those that ended before it)
		for u in $urls; do
			while :; do
				rc=0
				SPIRT_TIMEOUT=2s spirt-store -q -s "$u" get -f \
				    "gagg/$lastx" >/dev/null 2>&1 || rc=$?
				{ [ "$rc" -ne 0 ] && [ "$rc" -ne 69 ]; } || break
				[ "$(now)" -lt "$end" ] || break
				sleep 0.1
			done
		done
	fi
fi
done_=1
persist

# ---- a plot of loss and test accuracy against time, next to the store ----
if command -v gnuplot >/dev/null 2>&1; then
	gnuplot <<GP 2>/dev/null || say "warning: gnuplot failed; the log is $log"
set terminal pngcairo size 900,500 noenhanced
set output "$plot"
set datafile separator "\t"
set datafile missing "-"
set key top right box opaque
set xlabel "training time (s)"
set ylabel "loss"
set y2label "test accuracy"
set y2range [*:1]
set ytics nomirror
set y2tics
set grid
set title "spirt-train $model ($spec), $fns functions x batch $batch, $opt lr $lr, $what"
plot "$log" using 1:4 with lines lc rgb "#c8b4e6" title "train loss (one step)", \
     "$log" using 1:4 smooth bezier lw 2 lc rgb "#6a3d9a" title "train loss (smoothed)", \
     "$log" using 1:5 with linespoints lw 2 lc rgb "#1b9e77" title "test loss", \
     "$log" using 1:6 axes x1y2 with linespoints lw 2 lc rgb "#d95f02" title "test accuracy"
GP
fi
say "model/$model@$t; log $log; plot $plot"
