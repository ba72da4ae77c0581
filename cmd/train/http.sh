# cmd/train/http.sh - spirt-train's part: peers over HTTP: this peer's server.
# mk/train.mk puts cmd/train/loop.sh and the parts, in its order, into one
# script
# ---- peers over HTTP: a peer whose own line is http://[ID@]host:port
# serves its store there for the run (spirt-peer serve, with the same
# SPIRT_KEY, SPIRT_TOKEN, SPIRT_GROUP, SPIRT_ALLOW as the exchange),
# spirt-run's child ----
# serve_start NAME LISTEN [STORE]: spirt-peer serve of STORE (default
# SPIRT_STORE's) on LISTEN, spirt-run's child NAME, guarded once it says
# it listens (-F 1).  A port in use it tries again for --deadline, at
# least 10 s (--retry: the server of a run before may hold it for up to
# 5 s; chaos saw a --deadline of 5 s run out); one still silent
# --deadline after that is killed (75)
serve_start() {
	_sd=$deadline
	[ "$_sd" -ge 10000 ] || _sd=10000
	[ "$verbose" -eq 0 ] ||
	    printf '+ spirt-peer serve -s %s -l %s --retry %s\n' "${3:-$store}" "$2" "$_sd" >&2
	echo "start $1 spirt-peer serve ${3:+-s $3 }-l $2 -F 1 --retry $_sd" >&3
	_sd=$((_sd + deadline))
	_e=$(($(now) + _sd))
	while :; do
		rc=0
		ack=$(SPIRT_PARENT=$$ spirt-run -r -u "$_e" <&9) || rc=$?
		case $rc:$ack in
		"0:answer $1 "*)
			echo "guard $1" >&3
			srvs="$srvs$1 "
			return 0 ;;
		"0:died $1 "*) die 69 "--peers $peers: cannot serve ${3:-$store} on $2" ;;
		0:*) aside "--peers $peers: spirt-peer serve" ;;
		75:*)
			echo "kill $1" >&3
			die 75 "--peers $peers: spirt-peer serve did not say it listens on $2 within $_sd ms (--deadline and the port's retries)" ;;
		*) die 70 "spirt-run went away" ;;
		esac
	done
}

# (this peer's own line, selfurl, from spirt-peer peers)
case $selfurl in
http://*)
	listen=${selfurl#http://} listen=${listen#*@} listen=${listen%/}
	serve_start srv "$listen"
	srv=1
	[ -z "$bpeer" ] || byzpeer_serve
	;;
esac
beats_start
warm_start
