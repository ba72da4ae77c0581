# cmd/train/guard.sh - spirt-train's part: the guard, and the cleanup of what
# the driver started. mk/train.mk puts cmd/spirt-train.sh and the parts, in
# its order, into one script
# ---- the guard, and the cleanup of what the driver started ----
work= srv= srvdir= guard= gfile= gdir=
# guarded: the server's and the beaters' pids, for the guard (and the
# evaluation's second server, bsrv)
guarded() {
	[ -n "$gfile" ] || return 0
	echo "${srv:-} ${bsrv:-} $beatpids" >"$gfile.tmp" && mv "$gfile.tmp" "$gfile"
}
# guard_start: a driver killed outright (SIGKILL: no trap runs) leaves
# no server or beater behind: the guard, once a second, ends them once
# the driver is gone (the beaters with a last word: the others see this
# peer stopped at once, and the same command started again can listen).
# And one of them that dies (killed, a crash) would leave a peer nobody
# can pull from, or whose watcher hears no one: the guard names it in
# $gfile.died and ends the run (SIGTERM: 75, rerun to resume)
guard_start() {
	[ -n "$peers" ] || return 0
	# (its directory holds what a killed driver would leave: the guard
	# removes it, the server's and the catch-up's files with it)
	gdir=$(mktemp -d "${TMPDIR:-/tmp}/spirt-peer.XXXXXX") ||
	    die 73 "cannot make a directory in ${TMPDIR:-/tmp}"
	gfile=$gdir/guard
	(
		set +e          # (a kill of one gone, a file gone: go on)
		trap '' INT TERM
		_told=0
		while kill -0 $$ 2>/dev/null; do
			sleep 1
			[ "$_told" -eq 0 ] || continue
			for _p in $(cat "$gfile" 2>/dev/null); do
				! alive "$_p" || continue
				# (still listed: not one the driver replaced)
				case " $(cat "$gfile" 2>/dev/null) " in
				*" $_p "*) ;;
				*) continue ;;
				esac
				echo "$_p" >"$gfile.died"
				kill -TERM $$ 2>/dev/null
				_told=1
				break
			done
		done
		_g=$(cat "$gfile" 2>/dev/null)
		# (spirt-run too, which ends the warm tools: its SPIRT_PARENT
		# does first, on Linux)
		# shellcheck disable=SC2046
		kill -TERM $(cat "$gfile.k" 2>/dev/null) 2>/dev/null
		# shellcheck disable=SC2086
		kill -TERM $_g 2>/dev/null
		# (a server finishing the long polls under way may take
		# seconds: it is killed after one, as the port is wanted)
		sleep 1
		# shellcheck disable=SC2086
		kill -KILL $_g 2>/dev/null
		rm -rf "$gdir"
	) </dev/null >/dev/null 2>&1 &
	guard=$!
}
cleanup() {
	[ -z "$guard" ] || kill -KILL "$guard" 2>/dev/null || :
	guard=
	[ -z "$gfile" ] || rm -f "$gfile" "$gfile.tmp" "$gfile.died" \
	    "$gfile.k" "$gfile.k.tmp"
	gfile=
	[ -z "${sup:-}" ] || kill "$sup" 2>/dev/null || :
	sup=
	[ -z "$work" ] || rm -rf "$work"
	work=
	[ -z "$srv" ] || { kill -TERM "$srv" 2>/dev/null || :; wait "$srv" || :; }
	srv=
	[ -z "$bpeer" ] || byzpeer_cleanup
	[ -z "$srvdir" ] || rm -rf "$srvdir"
	srvdir=
	[ -z "$gdir" ] || rm -rf "$gdir"
	gdir=
	beats_stop
}
trap 'cleanup' EXIT
trap 'cleanup; trap - INT; kill -INT $$' INT
# (SIGTERM from the guard: this peer's server or a beater died)
termed() {
	_d=
	[ -z "$gfile" ] || [ ! -s "$gfile.died" ] || _d=$(cat "$gfile.died")
	if [ -n "$_d" ]; then
		_w="spirt-beat"
		[ "$_d" != "$srv" ] || _w="spirt-peer serve"
		[ -z "$bpeer" ] || byzpeer_died "$_d"
		cleanup
		trap - EXIT
		die 75 "this peer's $_w (pid $_d) died; rerun to resume"
	fi
	cleanup
	trap - TERM
	kill -TERM $$
}
trap 'termed' TERM

# alive PID: a tool of the driver's runs.  A dead one the driver has not
# reaped yet is a zombie, which kill -0 still finds: /proc tells.
alive() {
	if [ -r "/proc/$1/stat" ]; then
		read -r _ _ st _ <"/proc/$1/stat" 2>/dev/null &&
		    [ "$st" != Z ]
	else
		kill -0 "$1" 2>/dev/null
	fi
}

