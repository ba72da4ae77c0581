# cmd/train/http.sh - spirt-train's part: peers over HTTP: this peer's server.
# mk/train.mk puts cmd/spirt-train.sh and the parts, in its order, into one
# script
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
		fork_model "$last" "$bfork.tmp" && mv "$bfork.tmp" "$bfork" ||
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
