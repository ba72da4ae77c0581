# cmd/train/peers.sh - spirt-train's part: across peers: the exchange's rule.
# mk/train.mk puts cmd/spirt-train.sh and the parts, in its order, into one
# script (a Byzantine peer, evaluation only, is cmd/train-byz/peer.sh)
# ---- across peers ----
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
