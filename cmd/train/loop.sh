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
	''|[0-9]*|*[!a-z0-9_]*|"$a") die 70 "spirt-train.sh: not a NAME=VALUE: $a" ;;
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
# The front read the peers file (this one's id and location:
# self, selfurl; the others' locations: others, those over HTTP: urls,
# ID:LINE: oids), checked the rules, the attack and the model's spec,
# exported the store, its sync and the data sets (SPIRT_STORE,
# SPIRT_SYNC, SPIRT_DATASET, SPIRT_DATASET_TEST, SPIRT_THREADS), checked
# the data sets (--data's demo sets, when missing, from their files:
# shtrain, shtest, sharded below) and counted the steps: this peer's
# functions are workers w0 .. w0+M-1 of nw; a worker's samples per, the
# steps per epoch spe, the schedule's total, the run's stop, the
# evaluations' period every, the newest model step last (spirt-train(1))
