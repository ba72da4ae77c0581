# cmd/train/run.sh - spirt-train's part: the warm tools and cold functions
# under spirt-run. mk/train.mk puts cmd/spirt-train.sh and the parts, in its
# order, into one script
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

