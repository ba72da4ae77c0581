# cmd/train/exchange.sh - spirt-train's part: the exchange with the other
# peers. mk/train.mk puts cmd/train/loop.sh and the parts, in its order, into
# one script
# ---- the exchange with the other peers: one warm spirt-peer exchange
# -i for the run (its sessions kept, its pulls waiting on the others'
# servers), fed step lines through spirt-run ("post": it keeps its own
# --deadline); with --cold, one spirt-peer exchange per round ----
xwarm=
# --exchange parts: each peer combines its part (spirt-peer exchange --parts)
[ "$xmode" = all ] || xch="$xch --parts"
# xpeers: the peers file the exchange reads (another once a member was
# excluded: xexclude); xcaught: the member the last round proved a liar
xpeers=$peers xcaught=
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
			rc=${ack##*error=} xcaught=
			case $ack in *" caught="*)
				xcaught=${ack#* caught=} xcaught=${xcaught%% *} ;;
			esac
			if [ "$rc" -eq 65 ] && [ -n "$xcaught" ] &&
			    [ "$xcaught" != "$self" ]; then
				xexclude "$xcaught" "$1"
				return 2
			fi
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

# xexclude ID S: the round of step S proved that member ID, a part's
# owner, signed a wrong combination of its part (spirt-peer exchange
# --parts: every member checks a part its checker found wrong, so all of
# them prove it in the same round, and none applied it).  ID is out of
# the run: the exchange starts again with a peers file without it (the
# round of S again, its parts cut over the others), and its workers'
# samples from S on go to the live ones from the step after the round,
# as a dead peer's do with --beat (peerout: spirt-shard --since), for
# good (out of oall: livelist never names them again)
xexclude() {
	_f="$work/peers.x$2"
	while IFS= read -r _l; do
		case $_l in "$1 "*|"$1	"*) ;; *) printf '%s\n' "$_l" ;; esac
	done <"$xpeers" >"$_f" || die 73 "$_f: cannot write the peers without $1"
	# (the -P of the exchange's command, no sed: a path is no pattern)
	xch="${xch%% -P "$xpeers" *} -P $_f ${xch#* -P "$xpeers" }"
	xpeers=$_f
	_new= _o=
	for _p in $oids; do
		if [ "${_p%:*}" != "$1" ]; then
			_o="$_o $_p"
			continue
		fi
		_w=$((${_p#*:} * fns)) _i=0
		while [ "$_i" -lt "$fns" ]; do
			drop oall $((_w + _i))
			drop pdead $((_w + _i))
			xout="$xout$((_w + _i)) "
			_new="$_new $((_w + _i))"
			_i=$((_i + 1))
		done
	done
	oids=$_o
	echo "kill xch" >&3
	echo "start xch $xch -i $xsrc" >&3
	tell "step $2: $1 signed a wrong combination of its part, proven (the proof above): it is out of the run, the round of step $2 again without it"
	# its samples: from the round's first step S, to the live workers
	# from the step after the round (none left: the run ends)
	# (at an epoch's first step, --since it: the rows of --epoch's)
	_n=$(($2 + xu)) _s=$2
	[ "$_n" -lt "$stop" ] || return 0
	[ "$_s" -ge $((_n / spe * spe)) ] || _s=$((_n / spe * spe))
	rc=0
	_a=$(run spirt-shard -q -d "$train" -t "$_n" -b "$batch" --since "$_s" \
	    --group "$fns" --live "$(livelist)" --holders "$w0,$fns") || rc=$?
	[ "$rc" -eq 0 ] || die "$rc" "step $_n: could not reassign the samples of $1"
	assign_set "$_a"
	tell "step $_n: the workers$_new of $1: their samples from step $_s go to the live ones (revision $as_rev)"
}
