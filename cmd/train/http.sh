# cmd/train/http.sh - spirt-train's part: peers over HTTP: this peer's server.
# mk/train.mk puts cmd/spirt-train.sh and the parts, in its order, into one
# script
# ---- peers over HTTP: a peer whose own line is http://[ID@]host:port
# serves its store there for the run (spirt-peer serve, with the same
# SPIRT_KEY, SPIRT_TOKEN, SPIRT_GROUP, SPIRT_ALLOW as the exchange) ----
# serve_ready: the address line of the server $srv, within --deadline
# (spirt-run -r: the wait is spirt-run's, on the monotonic clock; no
# timer of the driver's): a server that neither says it listens nor
# exits (a store it waits for, a stopped process) is killed, and the run
# stops with 75
serve_ready() {
	_e=$(($(now) + deadline))
	while :; do
		rc=0
		addr=$(spirt-run -r -u "$_e" <&5) || rc=$?
		# (66, the end of the input: the server ended, or its shell
		# has not opened the FIFO yet (no writer there): the server
		# alive, read again)
		[ "$rc" -eq 66 ] && alive "$srv" || break
		pause 50 "$_e" || { rc=75; break; }
	done
	exec 5<&-
	[ "$rc" -ne 0 ] || return 0
	if [ "$rc" -eq 75 ]; then
		# (2 s to end, then killed: a stopped one ends on no TERM)
		kill -TERM "$srv" 2>/dev/null || :
		_e=$(($(now) + 2000))
		while alive "$srv" && pause 50 "$_e"; do :; done
		kill -KILL "$srv" 2>/dev/null || :
		wait "$srv" 2>/dev/null || :
		srv=
		die 75 "--peers $peers: spirt-peer serve did not say it listens on $listen within $deadline ms (--deadline)"
	fi
	wait "$srv" 2>/dev/null || :
	srv=
	# (the same command run again at once: the server of the run
	# before, whose driver was killed, may hold the port a moment yet)
	spent "$send" || return 1
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
	send=$(($(now) + _sd))
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
		pause 200
	done
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
		[ -z "$bpeer" ] || byzpeer_serve
		;;
	esac
fi
beats_start
