# cmd/train-byz/peer.sh - spirt-train's evaluation part: a Byzantine peer
# (--byzantine peer:ATTACK).  Not in the production driver: mk/train.mk
# builds it as spirt-train-byzpeer.sh, which spirt-train reads (.) only
# when asked for a Byzantine peer; it defines the byzpeer_ functions the
# driver calls at its hooks (setup: check; http: serve; step: exchange;
# run: cleanup) and uses the driver's variables and functions

# byzpeer_check: --byzantine peer:A, checked before any work.  A peer
# that flips labels is every function of it flipping (the functions'
# form); any other attack is spirt-attack -a on its aggregate before each
# exchange; equivocate:A publishes the honest aggregate in the store and
# the crafted one in STORE.fork, with a round of its own there, so the
# pullers whose peers file names STORE.fork for this peer get the other
# story, each under this peer's signature.  Over HTTP (this peer's line
# a URL), equivocate@HOST:PORT:A: a second spirt-peer serve serves
# STORE.fork there (byzpeer_serve), and the pullers whose peers file names
# that URL for this peer get the other story
bpid= bequiv=0 battack= bfork= bflisten=
byzpeer_check() {
	bspec=$byz byz=
	[ -n "$peers" ] || die 64 "--byzantine $bspec: a Byzantine peer needs --peers"
	[ "$xh" -eq 0 ] || die 64 "--byzantine $bspec: not with --every"
	battack=$bpeer
	case $bpeer in
	equivocate:*) bequiv=1 battack=${bpeer#equivocate:} ;;
	equivocate@*)
		# HOST:PORT:A, HOST a name, an IPv4 address or [IPv6]
		bequiv=1 _r=${bpeer#equivocate@}
		case $_r in
		\[*\]:*) _h=${_r%%]*}] ;;
		*) _h=${_r%%:*} ;;
		esac
		_r=${_r#"$_h"} _r=${_r#:} _p=${_r%%:*}
		printf '%s\n' "$_h:$_p" | grep -Eqx \
		    '([0-9A-Za-z.-]+|\[[0-9A-Fa-f:.]+\]):[1-9][0-9]{0,4}' ||
			die 64 "--byzantine $bspec: expected peer:equivocate@HOST:PORT:ATTACK"
		[ "$_p" -le 65535 ] ||
			die 64 "--byzantine $bspec: port $_p is out of range (1 to 65535)"
		bflisten=$_h:$_p battack=${_r#"$_p"} battack=${battack#:} ;;
	esac
	[ -n "$battack" ] || die 64 "--byzantine $bspec: no attack after peer:"
	if [ "$battack" = labelflip ]; then
		[ "$bequiv" -eq 0 ] || die 64 "--byzantine $bspec: equivocate needs an attack on the aggregate, not labelflip"
		_x=0 bad=" " list= attack=labelflip
		while [ "$_x" -lt "$fns" ]; do
			bad="$bad$_x " list=$list${list:+,}$((w0 + _x))
			_x=$((_x + 1))
		done
		return 0
	fi
	rc=0
	e=$(spirt-attack -o /dev/null "$battack" </dev/null 2>&1) || rc=$?
	[ "$rc" -ne 64 ] || die 64 "--byzantine $bspec: unknown or malformed attack \"$battack\""
	[ "$bequiv" -eq 1 ] || return 0
	_u=$selfurl
	case $_u in
	http://*)
		[ -n "$bflisten" ] || die 64 "--byzantine $bspec: over HTTP the other story is served at an address of its own: peer:equivocate@HOST:PORT:ATTACK"
		_u=${_u#http://} _u=${_u#*@} _u=${_u%/}
		[ "$_u" != "$bflisten" ] || die 64 "--byzantine $bspec: $bflisten is this peer's own address ($peers)" ;;
	*://*) die 64 "--byzantine $bspec: this peer's URL $_u: equivocation is played over http:// or store paths" ;;
	*) [ -z "$bflisten" ] || die 64 "--byzantine $bspec: this peer's line in $peers is a store path: the other story is $store.fork, no address (peer:equivocate:ATTACK)" ;;
	esac
	bfork=$store.fork
	# (spirt-run, which runs its server, splits words at blanks)
	case $bflisten:$bfork in
	?*:*[[:space:]]*) die 64 "--byzantine $bspec: $bfork: a store path with a blank cannot be served beside" ;;
	esac
}
# fork_model T STORE: model@T, and its state if it has one
# (spirt-model(5)), into the other story's STORE: the same model as this
# peer's, hashed the same in the digests
fork_model() {
	spirt-store get "model/$model@$1" >"$store.byz-model.rec" &&
	    spirt-store -s "$2" put "model/$model@$1" "$store.byz-model.rec" ||
	    return
	_rc=0
	spirt-store get "mstate/$model@$1" >"$store.byz-state.rec" \
	    2>/dev/null || _rc=$?
	[ "$_rc" -ne 66 ] || return 0
	[ "$_rc" -eq 0 ] || return "$_rc"
	spirt-store -s "$2" put "mstate/$model@$1" "$store.byz-state.rec"
}
# byzpeer_publish T: before step T's exchange, this peer lies
byzpeer_publish() {
	[ "$battack" != labelflip ] || return 0
	if [ "$bequiv" -eq 0 ]; then
		run spirt-attack -q -S "$seed" -t "$1" -a agg "$battack" ||
			die 75 "step $1: spirt-attack -a agg $battack failed"
		return 0
	fi
	run spirt-attack -q -S "$seed" -t "$1" -a agg -o "$store.byz.rec" \
	    "$battack" || die 75 "step $1: spirt-attack -a agg $battack failed"
	# the fork is made whole, then renamed: a puller that opened it half
	# made (no scratch environment yet) would never see its xagg/
	f=$bfork
	[ -d "$bfork" ] || { f=$bfork.tmp; rm -rf "$f"; }
	fork_model "$1" "$f" &&
	    spirt-store -s "$f" put "agg/$1" "$store.byz.rec" &&
	    spirt-store -q -s "$f" prune -t "$1" "model/$model@" \
	    "mstate/$model@" agg/ xagg/ gagg/ digest/ &&
	    { [ "$f" = "$bfork" ] || mv "$f" "$bfork"; } ||
	    die 74 "step $1: $bfork: could not write the other story"
	# the other story's round, beside this one's (its outcome is no matter)
	$xch -s "$bfork" -t "$1" >/dev/null 2>>"$store.byz.log" &
	bpid=$!
}
# byzpeer_after T: after step T's round: the peer goes on whatever its
# round said (the others may have left it out); without gagg/T it applies
# its own aggregate
byzpeer_after() {
	[ -z "$bpid" ] || { wait "$bpid" || :; bpid=; }
	spirt-store get "gagg/$1" >/dev/null 2>&1 ||
		spirt-store get "agg/$1" | spirt-store -q put "gagg/$1" - ||
		die 74 "step $1: no gagg/$1, and agg/$1 could not stand for it"
}
# byzpeer_exchange T: step T's round of a Byzantine peer: it lies, then
# goes on whatever its round said (a cold round each step, its exit code
# no matter)
byzpeer_exchange() {
	byzpeer_publish "$1"
	run $xch $xsrc -t "$1" || :
	byzpeer_after "$1"
}

# byzpeer_serve: with peer:equivocate@HOST:PORT:A, the other story's
# store, STORE.fork (made at once, with the model it starts from, so that
# it can be served from the first step), served at HOST:PORT by a second
# spirt-peer serve under this peer's identity, as serve_start serves the
# store (spirt-run's child bsrv, guarded: it ends with the driver, and
# the run when it dies)
byzpeer_serve() {
	[ -n "$bflisten" ] || return 0
	if [ ! -d "$bfork" ]; then
		rm -rf "$bfork.tmp"
		fork_model "$last" "$bfork.tmp" && mv "$bfork.tmp" "$bfork" ||
		    die 74 "$bfork: could not make the other story's store"
	fi
	serve_start bsrv "$bflisten" "$bfork"
}
# byzpeer_cleanup: the fork's server and round, ended with the driver
byzpeer_cleanup() {
	[ -z "$bpid" ] || kill "$bpid" 2>/dev/null || :
	bpid=
}
