# cmd/train/exchange.sh - spirt-train's part: the exchange with the other
# peers. mk/train.mk puts cmd/spirt-train.sh and the parts, in its order, into
# one script
# ---- the exchange with the other peers: one warm spirt-peer exchange
# -i for the run (its sessions kept, its pulls waiting on the others'
# servers), fed step lines through spirt-run ("post": it keeps its own
# --deadline); with --cold, one spirt-peer exchange per round ----
xwarm=
# --exchange parts: each peer combines its part (spirt-peer exchange --parts)
[ "$xmode" = all ] || xch="$xch --parts"
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
		pause "$beat"
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
			xrow="	${ack##*ms=}	${_u%% *}/${_n%% *}"
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

