# cmd/train/peers.sh - spirt-train's part: across peers: the exchange's rule,
# and a Byzantine peer (evaluation only). mk/train.mk puts cmd/spirt-train.sh
# and the parts, in its order, into one script
# ---- across peers, and a Byzantine peer (evaluation only) ----
# peer_rule_args RULE Q: spirt-peer exchange's options for --peer-rule
# RULE, Q the fewest aggregates a round combines (its default quorum,
# more than half of the P peers); only numbers reach its argv.  A radius
# "auto" is the (f+1)-th largest distance, f = (Q-1)/2 the most a round
# of Q tolerates (1 of 4 peers)
peer_rule_args() {
	case $1 in
	mean|median|norm) echo "-r $1" ;;
	trim:*[!0-9.]*|trim:) return 1 ;;
	trim:*) echo "-r trim --trim ${1#trim:}" ;;
	cclip:?*|scclip:?*)
		pr=${1%%:*} pa=${1#*:} pl=1
		pt=${pa%%:*}
		case $pa in *:*) pl=${pa#*:} ;; esac
		case $pl in ''|*[!0-9]*) return 1 ;; esac
		case $pt in
		auto) echo "-r $pr --tau auto --byzantine $((($2 - 1) / 2)) --iters $pl" ;;
		''|*[!0-9.eE-]*) return 1 ;;
		*) echo "-r $pr --tau $pt --iters $pl" ;;
		esac ;;
	*) return 1 ;;
	esac
}
# byzpeer_check: --byzantine peer:A, checked before any work.  A peer
# that flips labels is every function of it flipping (the functions'
# form); any other attack is spirt-attack -a on its aggregate before each
# exchange; equivocate:A publishes the honest aggregate in the store and
# the crafted one in STORE.fork, with a round of its own there, so the
# pullers whose peers file names STORE.fork for this peer get the other
# story, each under this peer's signature.  Over HTTP (this peer's line
# a URL), equivocate@HOST:PORT:A: a second spirt-peer serve serves
# STORE.fork there (fork_serve), and the pullers whose peers file names
# that URL for this peer get the other story
bpid= bequiv=0 battack= bfork= bflisten= bsrv=
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
		byz="$(seq -s, 0 $((fns - 1))):labelflip"
		return 0
	fi
	rc=0
	e=$(spirt-attack -o /dev/null "$battack" </dev/null 2>&1) || rc=$?
	[ "$rc" -ne 64 ] || die 64 "--byzantine $bspec: unknown or malformed attack \"$battack\""
	[ "$bequiv" -eq 1 ] || return 0
	_u=$(awk -v p="$peer" '/^[[:space:]]*[^#[:space:]]/ {
		if (n++ == p) { print $2; exit } }' "$peers")
	case $_u in
	http://*)
		[ -n "$bflisten" ] || die 64 "--byzantine $bspec: over HTTP the other story is served at an address of its own: peer:equivocate@HOST:PORT:ATTACK"
		_u=${_u#http://} _u=${_u#*@} _u=${_u%/}
		[ "$_u" != "$bflisten" ] || die 64 "--byzantine $bspec: $bflisten is this peer's own address ($peers)" ;;
	*://*) die 64 "--byzantine $bspec: this peer's URL $_u: equivocation is played over http:// or store paths" ;;
	*) [ -z "$bflisten" ] || die 64 "--byzantine $bspec: this peer's line in $peers is a store path: the other story is $store.fork, no address (peer:equivocate:ATTACK)" ;;
	esac
	bfork=$store.fork
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
	    "mstate/$model@" agg/ xagg/ gagg/ digest/ && { [ "$f" = "$bfork" ] || mv "$f" "$bfork"; } ||
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

# (the parameters are numbers: nothing else may reach spirt-agg's argv)
case $rule in
mean|wmean|median|norm) aggargs="-r $rule" ;;
trim:*[!0-9.]*|krum:*[!0-9]*|mkrum:*[!0-9:]*|mkrum:*:*:*) aggargs= ;;
trim:?*) aggargs="-r trim --trim ${rule#trim:}" ;;
krum:?*) aggargs="-r krum --byzantine ${rule#krum:}" ;;
mkrum:?*:?*) r=${rule#mkrum:}; aggargs="-r mkrum --byzantine ${r%%:*} --select ${r#*:}" ;;
cclip:*[!0-9.eE:-]*|cclip:*:*:*) aggargs= ;;
cclip:?*:?*) r=${rule#cclip:}; aggargs="-r cclip --tau ${r%%:*} --iters ${r#*:}" ;;
cclip:?*) aggargs="-r cclip --tau ${rule#cclip:}" ;;
*) aggargs= ;;
esac
[ -n "$aggargs" ] || die 64 "-a $rule: expected mean, wmean, median, trim:F, \
norm, krum:f, mkrum:f:m or cclip:T[:L]"
[ "$bucket" -le 1 ] || aggargs="$aggargs --bucket $bucket --seed $seed"
if [ -n "$wmom" ]; then
	real --worker-momentum "$wmom" 0 0.999999
	aggargs="$aggargs --worker-momentum $wmom"
fi
# the exchange's rule across the P peers (peer_rule_args)
[ "$prule" = mean ] || [ -n "$peers" ] ||
	die 64 "--peer-rule $prule: it needs --peers"
xq=$((np / 2 + 1))
xargs_=$(peer_rule_args "$prule" "$xq") ||
	die 64 "--peer-rule $prule: expected mean, median, trim:F, norm, \
cclip:T[:L] or scclip:T[:L] (T a radius or auto)"
