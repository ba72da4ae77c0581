#!/bin/sh
# cron: a training that goes on a few steps at a time, one run per cron(8)
# tick; each run resumes at the last committed step (spirt-train keeps
# everything in the store), and a tick that finds the last run still going
# does nothing (flock).  A crontab line, every ten minutes:
#
#   */10 * * * * sh /path/to/examples/cron/run.sh /srv/spirt >>/srv/spirt/cron.log 2>&1
#
#   sh run.sh [workdir]      STEPS=n steps per run (default 50), FUNCTIONS=m
#                            (default 2); other spirt-train options after
#                            the workdir (the same on every run)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
# cron's PATH is short: the tools, when run from the tree or installed
PATH="$here/../..:$PATH:/usr/local/bin:/usr/bin:/bin"
per=${STEPS:-50} fns=${FUNCTIONS:-2}
work=${1:-$HOME/spirt-cron}
[ $# -eq 0 ] || shift
mkdir -p "$work" && cd "$work"
store="$work/train.db"

# one run at a time: the lock is held until this shell exits
exec 9>"$work/train.lock"
if ! flock -n 9; then
	echo "cron: $(date -u +%FT%TZ): the last run still holds $work/train.lock; nothing done" >&2
	exit 0
fi
# the newest committed step, 0 before the first run
last=$(spirt-store -s "$store" ls model/mlp@ 2>/dev/null | cut -f1 |
    sed 's/.*@//' | sort -n | tail -n 1)
last=${last:-0}
# $per more steps; the learning-rate schedule spans the epochs whatever
# --steps says, so runs of $per steps make the same model as one long run
spirt-train -q -s "$store" -n "$fns" -b 32 --steps $((last + per)) \
    --eval-every "$per" "$@"
echo "cron: $(date -u +%FT%TZ): steps $last to $((last + per))"
tail -n 1 "$store.train-mlp.tsv"
