# cmd/train/run.sh - spirt-train's part: the tools that live for the run,
# under spirt-run. mk/train.mk puts cmd/train/loop.sh and the parts, in its
# order, into one script
# ---- every tool that lives for the run runs under spirt-run
# (spirt-run(1)): the warm functions, spirt-agg, spirt-update and the
# exchange, the cold functions, and with --peers this peer's server and
# beaters.  It starts them, relays the driver's requests (fd 3) to them
# and their answers back (fd 9), one line each, kills one that does not
# answer (warm) or end (cold) within --deadline (CLOCK_MONOTONIC: "late
# NAME"), says how one ended ("died NAME"), and ends them all when the
# driver ends, even killed outright (SPIRT_PARENT): the beaters with
# their last word, the others see this peer stopped at once.  The server
# and the beaters are guarded: one that dies (killed, a crash) would
# leave a peer nobody can pull from, or whose watcher hears no one, and
# spirt-run tells the driver at once (SIGUSR1: lost), which stops (75,
# rerun to resume).  The driver's private directory, $work (the FIFOs, a
# catch-up's files), spirt-run removes as it ends.  Names: g0 .. gM-1
# the warm functions, c0 .. cM-1 the cold ones, agg, upd, xch, ev; srv
# (and an evaluation's bsrv) the server, b the beater, w the watcher ----
sup= work= srv= srvs=
cleanup() {
	trap '' USR1
	[ -z "$bpeer" ] || byzpeer_cleanup
	if [ -n "$sup" ]; then
		# (the servers first, each once it has answered the long polls
		# it holds, within 10 s: then their ports are free)
		_k=0 _e=$(($(now) + 10000))
		for _n in $srvs; do echo "stop $_n" >&3; _k=$((_k + 1)); done
		while [ "$_k" -gt 0 ] && ack=$(SPIRT_PARENT=$$ spirt-run -r -u "$_e" <&9); do
			case $ack in
			"died srv "*|"died bsrv "*|"refused 69 stop "*)
				_k=$((_k - 1)) ;;
			esac
		done
		# (a run that is done: its beaters fall silent, so that a peer
		# a step behind still counts it for the dead threshold's time,
		# and finishes too; else their last beat says they stop)
		[ "${done_:-0}" -eq 0 ] || [ "$beat" -eq 0 ] ||
		    printf 'kill b\nkill w\n' >&3
		# (the end of its input: spirt-run ends each tool, SIGTERM and
		# SIGKILL a second later, and removes $work)
		exec 3>&-
		wait "$sup" || :
	fi
	sup=
	[ -z "$work" ] || rm -rf "$work"
	work=
}
trap 'cleanup' EXIT
trap 'cleanup; trap - INT; kill -INT $$' INT
trap 'cleanup; trap - TERM; kill -TERM $$' TERM
# lost: $ack, spirt-run's "died NAME pid=P ..." of a guarded tool: the
# run stops
lost() {
	trap '' USR1
	_n=${ack#died } _p=${ack#* pid=}
	case ${_n%% *} in
	srv) _n="spirt-peer serve" ;;
	bsrv) _n="spirt-peer serve of $bfork" ;;
	*) _n=spirt-beat ;;
	esac
	die 75 "this peer's $_n (pid ${_p%% *}) died; rerun to resume"
}
# told: SIGUSR1 from spirt-run, after that line: the last one read, or
# one still to read (the lines before it dropped)
told() {
	while :; do
		case $ack in "died "[bsw]*) lost ;; esac
		read -r ack <&9 || die 70 "spirt-run went away"
	done
}
ack=
trap told USR1
# work: the driver's private directory (POSIX has no mktemp: mkdir makes
# it, or fails if the name is there)
_i=0
until mkdir -m 700 "${TMPDIR:-/tmp}/spirt-train.$$.$_i" 2>/dev/null; do
	_i=$((_i + 1))
	[ "$_i" -lt 100 ] ||
	    die 73 "cannot make a directory in ${TMPDIR:-/tmp}"
done
work=${TMPDIR:-/tmp}/spirt-train.$$.$_i
# (<>: the driver's ends opened first, without waiting, so that
# spirt-run's open at once; they never see end of file or SIGPIPE)
mkfifo "$work/rq" "$work/an"
exec 3<>"$work/rq" 9<>"$work/an"
SPIRT_PARENT=$$ spirt-run -d "$deadline" -D "$work" <"$work/rq" \
    >"$work/an" 3>&- 9<&- &
sup=$!
# fn_start W: function W's warm process
fn_start() {
	echo "start g$1 $fncmd -q --serve -m $model -w $((w0 + $1)) -b $batch -S $seed $(flip "$1")" >&3
}
# warm_start: the warm tools, once the server listens and the beaters
# beat (cmd/train/http.sh)
warm_start() {
	[ "$cold" -eq 0 ] || return 0
	w=0
	while [ "$w" -lt "$fns" ]; do
		fn_start "$w"
		w=$((w + 1))
	done
	echo "start agg $agg --serve" >&3
	echo "start upd $upd --serve" >&3
	xwarm_start
}

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
	"refused 69 "*": not running") ;;
	"died "[bsw]*) lost ;;
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

# wait_done TOOL: read the answer of spirt-agg or spirt-update (TOOL);
# fail on an error= line
wait_done() {
	while read -r ack <&9 || die 70 "spirt-run went away"; do
		case $ack in
		"late agg "*|"late upd "*)
			die 75 "step $t: no answer from $1 within --deadline $deadline ms; rerun to resume" ;;
		"answer "*error=*) _a=${ack#answer }; die 75 "step $t: ${_a#* }" ;;
		"answer agg "*|"answer upd "*) return 0 ;;
		*) aside "step $t" ;;
		esac
	done
}

