#!/bin/sh
# spirt-conform - check a gradient function against its contract,
# spirt-function(7): start it as spirt-train would, in a scratch store
# with a tiny data set and model, and say of each check ok or not ok.
# A predicate tool, as cmp(1): 0 if every check passed, 1 if one failed.
set -u

PROG=spirt-conform
VERSION=@VERSION@
USAGE="usage: spirt-conform [-q] [--cold | --evaluate | --warm]
                     [--data store] [--deadline ms] [--spec spec]
                     cmd [arg ...]"

usage() {
	if [ "$1" -eq 0 ]; then
		printf '%s\n' "$USAGE"
		cat <<'HELP'

      --cold           check the cold form only (default: warm and cold)
      --data STORE     the data set of STORE (its data/ keys), not the
                       built-in table of 4 features and 3 classes
      --deadline MS    each answer and invocation, in ms (default 10000)
      --evaluate       cmd is an evaluation function (spirt-eval's place)
      --spec SPEC      the model (default softmax:4:3)
      --warm           check the warm form only
  -q, --quiet          print only the checks that fail
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

# ---- options ----
forms="warm cold" data='' deadline=10000 spec=softmax:4:3 quiet=0
while [ $# -gt 0 ]; do
	case $1 in
	--*=*) a=${1%%=*} v=${1#*=}; shift; set -- "$a" "$v" "$@" ;;
	esac
	case $1 in
	--data|--deadline|--spec)
		[ $# -ge 2 ] || { printf '%s: %s: missing argument\n' "$PROG" \
		    "$1" >&2; usage 64; } ;;
	esac
	case $1 in
	--cold) forms=cold ;;
	--evaluate) forms=evaluation ;;
	--warm) forms=warm ;;
	--data) data=$2; shift ;;
	--deadline) deadline=$2; shift ;;
	--spec) spec=$2; shift ;;
	-q|--quiet) quiet=1 ;;
	-h|--help) usage 0 ;;
	-V|--version) echo "$PROG $VERSION"; exit 0 ;;
	--) shift; break ;;
	-*) usage 64 ;;
	*) break ;;
	esac
	shift
done
[ $# -ge 1 ] || usage 64
case $deadline in
''|*[!0-9]*|0*) die 64 "--deadline $deadline: expected ms from 1 to 86400000" ;;
esac
[ ${#deadline} -le 8 ] && [ "$deadline" -le 86400000 ] ||
	die 64 "--deadline $deadline: expected ms from 1 to 86400000"
[ -n "$spec" ] || die 64 "--spec: an empty spec"

# ---- the tools: beside this script, then PATH (as spirt-train) ----
here=.
case $0 in */*) here=${0%/*} ;; esac
here=$(cd -P -- "$here" 2>/dev/null && pwd -P) || here=${0%/*}
[ ! -x "$here/spirt-grad" ] || PATH=$here:$PATH
export PATH
for d in spirt-store spirt-shard spirt-init spirt-grad spirt-agg; do
	command -v "$d" >/dev/null 2>&1 ||
		die 69 "$d: not found beside $PROG ($here) or on PATH"
done
command -v "$1" >/dev/null 2>&1 ||
	die 69 "$1: not found"
[ -z "$data" ] || [ -e "$data" ] || die 66 "--data $data: no such store"
# the function's words, quoted for eval: each as it was given
cmdq=
for a in "$@"; do
	cmdq="$cmdq '$(printf '%s' "$a" | sed "s/'/'\\\\''/g")'"
done

# ---- the scratch store: a tiny data set in 2 shards and model m@0 ----
work=$(mktemp -d "${TMPDIR:-/tmp}/spirt-conform.XXXXXX" 2>/dev/null) ||
	die 73 "cannot make a scratch directory in ${TMPDIR:-/tmp}"
fpid=
cleanup() {
	[ -z "$fpid" ] || kill -9 "$fpid" 2>/dev/null
	[ -z "$fpid" ] || wait "$fpid" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 75' INT TERM
# (a function gone: a request written to it is not our death)
trap '' PIPE
S=$work/store B=8
export SPIRT_STORE="$S" SPIRT_THREADS=1
unset SPIRT_SAMPLE_LOG
if [ -n "$data" ]; then
	keys=$(spirt-store -s "$data" ls data/ 2>"$work/e" | cut -f1) &&
	    [ -n "$keys" ] ||
		die 66 "--data $data: no data set in it: $(head -n 1 "$work/e")"
	for k in $keys; do
		spirt-store -s "$data" get "$k" | spirt-store -q put "$k" ||
			die 74 "--data $data: cannot copy $k"
	done
else
	# 3 classes of 20 points in 4 dimensions, class k about 2 e_k
	awk 'function u() {
		x = (16807 * x) % 2147483647
		return x / 2147483647
	}
	BEGIN {
		x = 7
		for (i = 0; i < 60; i++) {
			k = i % 3; line = ""
			for (j = 0; j < 4; j++)
				line = line sprintf("%.5f,",
				    (j == k) * 2 + u() + u() - 1)
			print line k
		}
	}' >"$work/t.csv"
	spirt-shard -q -f csv --label-col last -n 2 --seed 1 "$work/t.csv" &&
	spirt-shard -q -f csv --label-col last -d test "$work/t.csv" ||
		die 70 "cannot shard the built-in table"
fi
spirt-init -q -m m -S 1 "$spec" 2>"$work/e" ||
	die 64 "--spec $spec: $(sed -n '1s/^spirt-init: //p' "$work/e")"
# the model: P parameters, its name; the assignment's revision
P=$(spirt-store show model/m@0 | sed -n 's/^shape=//p')
name=$(spirt-store show model/m@0 | sed -n 's/^name=//p')
rev=$(spirt-store show data/train/assign | sed -n 's/^step=//p')
# what spirt-grad takes at step 0 for workers 0 and 1: their samples
nw=2 want0='' want1=''
for w in 0 1; do
	if ! spirt-grad -q -m m -t 0 -w $w -b $B -S 1 -o "$work/ref$w" \
	    2>"$work/e"; then
		[ "$w" -eq 1 ] ||
			die 65 "--spec $spec does not fit the data: $(
			    head -n 1 "$work/e")"
		nw=1
		continue
	fi
	eval "want$w=\$(spirt-store inspect \"\$work/ref$w\" |
	    sed -n 's/^samples=//p')"
done

# ---- checks ----
n=0 failed=0
say() {         # say WHY: the check's line, ok when WHY is empty
	n=$((n + 1))
	if [ -z "$1" ]; then
		[ "$quiet" -eq 1 ] || printf 'ok %d - %s\n' "$n" "$what"
	else
		printf 'not ok %d - %s: %s\n' "$n" "$what" "$1"
		failed=$((failed + 1))
	fi
}
now() { date +%s%N; }
# grads: the gradient keys in the store, one line
grads() {
	spirt-store ls grad/ 2>/dev/null | cut -f1 | tr '\n' ' ' | sed 's/ $//'
}
# record T W: $why, empty if grad/T/W is a record as spirt-function(7)
# says (P floats of the model, its name, step T, origin W, the samples
# spirt-grad takes, the assignment's revision, finite values and loss)
record() {
	why=$(spirt-store show "grad/$1/$2" 2>&1) ||
		{ why="no grad/$1/$2 in the store"; return; }
	_s=
	eval "_s=\${want$2-}"
	why=$(printf '%s\n' "$why" | awk -F= -v P="$P" -v nm="$name" \
	    -v t="$1" -v w="$2" -v s="$_s" -v r="$rev" -v q="'" '
		{ v[$1] = substr($0, length($1) + 2) }
		function no(m) { if (!why) why = m }
		END {
			if (v["checksum"] != "ok")
				no("a torn or corrupt record")
			if (v["dtype"] != "f32")
				no("dtype " v["dtype"] ", not f32")
			if (v["shape"] != P)
				no("shape " v["shape"] ", not the model" q \
				    "s " P)
			if (v["nan"] != 0 || v["inf"] != 0)
				no(v["nan"] " NaN and " v["inf"] " Inf values")
			if (v["name"] != nm)
				no("name \"" v["name"] "\", not the model" q \
				    "s \"" nm "\"")
			if (v["step"] != t) no("step " v["step"] ", not " t)
			if (v["origin"] != w)
				no("origin " v["origin"] ", not worker " w)
			if (s != "" && v["samples"] != s)
				no("samples " v["samples"] ", not the " s \
				    " of the minibatch")
			if (v["revision"] != r)
				no("revision " v["revision"] \
				    ", not the assignment" q "s " r)
			if (v["loss"] !~ /^[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?$/)
				no("loss " v["loss"])
			print why
		}')
}
# only KEYS: $why, empty if the store's gradients are KEYS
only() {
	_g=$(grads)
	why=
	[ "$_g" = "$*" ] ||
		why="the store's gradients are \"$_g\", not \"$*\""
}
# agg T: $why, empty if spirt-agg takes step T's gradients, leaving none
# out (it writes nothing: -o)
agg() {
	if spirt-agg -t "$1" --batch $B -o "$work/agg" 2>"$work/e"; then
		why=$(head -n 1 "$work/e")
	else
		why="spirt-agg refuses them ($?): $(head -n 1 "$work/e")"
	fi
}
clear() {       # clear: no gradient left in the store
	_g=$(grads)
	[ -z "$_g" ] || spirt-store rm $_g
}

# -- warm: one process, requests on a FIFO, answers in a file --
# start W: the warm function of worker W, its stdin fd 3 (closing it is
# the end of its input)
start() {
	rm -f "$work/in"
	mkfifo "$work/in"
	: >"$work/out"
	eval "SPIRT_PARENT=\$\$ $cmdq -q --serve -m m -w $1 -b $B -S 1 \
	    <\"\$work/in\" >\"\$work/out\" 2>>\"\$work/err\" &"
	fpid=$!
	exec 3>"$work/in"
	got=0
}
# ask LINE: send LINE; $ans its answer within --deadline; else $why
ask() {
	printf '%s\n' "$1" >&3 2>/dev/null
	got=$((got + 1))
	_end=$(($(now) + deadline * 1000000))
	while [ "$(wc -l <"$work/out")" -lt "$got" ]; do
		if ! kill -0 "$fpid" 2>/dev/null; then
			[ "$(wc -l <"$work/out")" -lt "$got" ] || break
			wait "$fpid"
			why="it ended (status $?) without an answer to \"$1\""
			fpid=
			return 1
		fi
		if [ "$(now)" -gt "$_end" ]; then
			why="no answer to \"$1\" within --deadline $deadline ms"
			stop
			return 1
		fi
		sleep 0.02
	done
	ans=$(sed -n "${got}p" "$work/out")
	why=
}
stop() {        # stop: the function killed
	exec 3>&-
	[ -z "$fpid" ] || kill -9 "$fpid" 2>/dev/null
	[ -z "$fpid" ] || wait "$fpid" 2>/dev/null
	fpid=
}

warm() {
	clear
	what="warm: answers \"0\" with step=0 worker=0 samples=$want0 loss=L"
	start 0
	if ask 0; then
		case $ans in
		"step=0 worker=0 samples=$want0 loss="?*) ;;
		*) why="answered \"$ans\"" ;;
		esac
	fi
	say "$why"
	what="warm: writes grad/0/0, the model's $P floats, its metadata right"
	record 0 0
	[ -n "$why" ] || only grad/0/0
	say "$why"
	if [ "$nw" -eq 2 ]; then
		what="warm: answers \"0 1\" for worker 1, writes grad/0/1"
		if [ -n "$fpid" ] && ask "0 1"; then
			case $ans in
			"step=0 worker=1 samples=$want1 loss="?*) record 0 1 ;;
			*) why="answered \"$ans\"" ;;
			esac
		elif [ -z "$why" ]; then
			why="it is not running"
		fi
		say "$why"
		what="warm: spirt-agg takes the step's gradients"
		agg 0
		say "$why"
	fi
	stop

	clear
	what="warm: junk lines answered error=64, nothing written, and it goes"
	what="$what on"
	start 0
	why=
	long=$(printf '%0300d' 0)
	for j in 1x "" 01 -1 "+1" " 0" "0 " "0  1" "0 1 2" "$(printf '0\r')" \
	    "$long" 18446744073709551615 "0 4294967295" a; do
		ask "$j" || break
		[ "$ans" = error=64 ] ||
			{ why="answered \"$ans\" to \"$j\""; break; }
	done
	if [ -z "$why" ]; then
		only
		[ -n "$why" ] || ! ask 0 || case $ans in
		"step=0 worker=0 "*) ;;
		*) why="then answered \"$ans\" to \"0\"" ;;
		esac
	fi
	say "$why"
	what="warm: a step without a model (7) answered step=7 worker=0"
	what="$what error=66, nothing written"
	if [ -z "$fpid" ]; then
		why="it is not running"
	elif ask 7; then
		[ "$ans" = "step=7 worker=0 error=66" ] ||
			why="answered \"$ans\""
		[ -n "$why" ] || only grad/0/0
	fi
	say "$why"
	what="warm: at the end of its input it exits with the worst code it"
	what="$what answered (66)"
	why=
	if [ -z "$fpid" ]; then
		why="it is not running"
	else
		exec 3>&-
		_end=$(($(now) + deadline * 1000000))
		while kill -0 "$fpid" 2>/dev/null &&
		    [ "$(now)" -le "$_end" ]; do
			sleep 0.02
		done
		if kill -0 "$fpid" 2>/dev/null; then
			why="still running after --deadline $deadline ms"
		else
			wait "$fpid"
			rc=$? fpid=
			[ "$rc" -eq 66 ] || why="exit $rc"
		fi
	fi
	stop
	say "$why"

	clear
	what="warm: killed during a request, the store holds its whole record"
	what="$what or none"
	start 0
	printf '0\n' >&3
	killed
}

# killed: the function under way killed 50 ms on; the check that the
# store holds its record whole or none
killed() {
	sleep 0.05
	stop
	if [ -z "$(grads)" ]; then
		why=
	else
		record 0 0
	fi
	say "$why"
}

# -- cold: one process an invocation --
# invoke ARGS: the cold function with ARGS after its words, within
# --deadline; $rc its status, 137 if it was killed at the deadline
invoke() {
	eval "SPIRT_PARENT=\$\$ $cmdq \"\$@\" </dev/null >>\"\$work/out\" \
	    2>>\"\$work/err\" &"
	fpid=$!
	_end=$(($(now) + deadline * 1000000))
	late=0
	while kill -0 "$fpid" 2>/dev/null; do
		if [ "$(now)" -gt "$_end" ]; then
			late=1
			break
		fi
		sleep 0.02
	done
	[ "$late" -eq 0 ] || kill -9 "$fpid" 2>/dev/null
	wait "$fpid"
	rc=$? fpid=
}
# exited: $why for an invocation that should have exited 0
exited() {
	if [ "$late" -eq 1 ]; then
		why="it did not end within --deadline $deadline ms"
	elif [ "$rc" -ne 0 ]; then
		why="exit $rc: $(tail -n 1 "$work/err")"
	else
		why=
	fi
}

# refused CODE ARGS: the check that an invocation with ARGS exits CODE
# in time, writing nothing
refused() {
	_c=$1
	shift
	invoke "$@"
	if [ "$late" -eq 1 ]; then
		why="it did not end within --deadline $deadline ms"
	else
		why=
		[ "$rc" -eq "$_c" ] || why="exit $rc"
		[ -n "$why" ] || only
	fi
	say "$why"
}

cold() {
	clear
	w=$((nw - 1))
	what="cold: -t 0 -w $w exits 0, writes grad/0/$w, the model's $P"
	what="$what floats,"
	what="$what its metadata right"
	invoke -q -m m -t 0 -w $w -b $B -S 1
	exited
	[ -n "$why" ] || record 0 $w
	[ -n "$why" ] || only grad/0/$w
	say "$why"
	if [ "$nw" -eq 2 ]; then
		what="cold: spirt-agg takes the step's gradients"
		invoke -q -m m -t 0 -w 0 -b $B -S 1
		exited
		[ -n "$why" ] || record 0 0
		[ -n "$why" ] || agg 0
		say "$why"
	fi
	clear
	what="cold: a step without a model (7) exits 66, nothing written"
	refused 66 -q -m m -t 7 -w 0 -b $B -S 1
	what="cold: an option it does not know exits 64, nothing written"
	refused 64 -q -m m -t 0 -w 0 -b $B -S 1 --no-such-option
	what="cold: killed during an invocation, the store holds its whole"
	what="$what record or none"
	eval "SPIRT_PARENT=\$\$ $cmdq -q -m m -t 0 -w 0 -b $B -S 1 </dev/null \
	    >>\"\$work/out\" 2>>\"\$work/err\" &"
	fpid=$!
	killed
}

# -- an evaluation function (--evaluate): one invocation a check --
evaluation() {
	what="evaluate: -q -m m -t 0 exits 0 and prints loss=L and accuracy=A"
	what="$what (A from 0 to 1)"
	: >"$work/out"
	invoke -q -m m -t 0
	exited
	[ -n "$why" ] || why=$(awk -F= '
		function num(x) {
			return x ~ /^-?[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?$/
		}
		$1 == "loss" { l = $2; nl++ } $1 == "accuracy" { a = $2; na++ }
		END {
			if (nl != 1 || !num(l))
				print "no loss=L line (a number)"
			else if (na != 1 || !num(a) || a + 0 < 0 || a + 0 > 1)
				print "no accuracy=A line (A from 0 to 1)"
		}' "$work/out")
	say "$why"
	what="evaluate: a step without a model (7) exits 66"
	refused 66 -q -m m -t 7
	what="evaluate: an option it does not know exits 64"
	refused 64 -q -m m -t 0 --no-such-option
}

for f in $forms; do
	$f
done
[ "$failed" -eq 0 ] || {
	printf '%s: %d of %d checks failed (spirt-function(7))\n' "$PROG" \
	    "$failed" "$n" >&2
	exit 1
}
exit 0
