#!/bin/sh
# spirt-train.sh - spirt-train's training loop: shard, init, then per step
# fan out M gradient functions, aggregate in the store, update in the
# store.  Its front, spirt-train (cmd/spirt-train.c), parses the options,
# checks every one that runs no tool, finds the tools (PATH) and runs this
# with the configuration as NAME=VALUE arguments.
#
# This script is the toolkit's own example of composing its tools; every
# stage is a plain spirt command you can run by hand.  See spirt-train(1).
# mk/train.mk puts cmd/train/loop.sh and the parts, in its order, into one
# script (a Byzantine peer, evaluation only, is cmd/train-byz/peer.sh)
set -eu

PROG=spirt-train
die() {         # die CODE MESSAGE
	printf '%s: %s\n' "$PROG" "$2" >&2
	exit "$1"
}
# the front's configuration: each NAME=VALUE assigned as it is (eval
# reads only NAME, which is checked, and VALUE's reference, never VALUE);
# the Byzantine functions (bad, list, attack) none unless it names them
[ "${1-}" = "--front=@VERSION@" ] ||
	die 64 "spirt-train.sh is spirt-train @VERSION@'s training loop: run spirt-train"
shift
bad=" " list= attack=
for a; do
	case ${a%%=*} in
	''|*[!a-z_]*|"$a") die 70 "spirt-train.sh: not a NAME=VALUE: $a" ;;
	esac
	eval "${a%%=*}=\${a#*=}"
done
set --
# first MESSAGES TOOL: the first line, without the tool's name
# (the whole first line when it is not the tool's; a tool that said
# nothing, killed, is named)
first() {
	printf '%s\n' "$1" | sed -n "1{s/^$2: //;p;}" | grep . ||
		echo "$2 ended, saying nothing"
}
# peers: P members (the id location lines of --peers), this one's share
# --peer: np, this one's id and location (self, selfurl), the others'
# locations (others; urls: those over HTTP) and ID:LINE (oids), read by
# spirt-peer peers once; the data set is sharded over all P x M
# functions, this peer's are w0 .. w0+M-1.  Spare slots (lines
# "id location spare": spares, selfspare) join the running group later,
# as a rejoiner does, out of the map until then: the others learn of one
# from its beats, which takes --beat
np=1 self= selfurl= others= urls= oids= spares= selfspare=0
if [ -n "$peers" ]; then
	rc=0
	e=$(spirt-peer peers -P "$peers" --peer "$peer" 2>&1) || rc=$?
	[ "$rc" -lt 126 ] || rc=70
	[ "$rc" -eq 0 ] || die "$rc" "$(first "$e" spirt-peer)"
	eval "$e"
	[ -z "$spares" ] && [ "$selfspare" -eq 0 ] || [ "$beat" -gt 0 ] ||
		die 64 "--peers $peers: spare slots (the lines that say spare) join a running group by their beats: give --beat"
fi
w0=$((peer * fns)) nw=$((np * fns))
# the exchange's quorum, more than half of the P peers; a radius "auto"
# is the (f+1)-th largest distance, f = (Q-1)/2 the most a round of Q
# tolerates (1 of 4 peers)
xq=$((np / 2 + 1))
[ "$xauto" -eq 0 ] || xargs_="$xargs_ --byzantine $(((xq - 1) / 2))"
