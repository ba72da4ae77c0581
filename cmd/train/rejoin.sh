# cmd/train/rejoin.sh - spirt-train's part: a peer behind the others rejoins
# (--beat). mk/train.mk puts cmd/train/loop.sh and the parts, in its order,
# into one script
# ---- rejoin (--beat): a peer behind the others (restarted after it died,
# or cut off by a partition) joins them at a step J it names
# (spirt-peer catch-up --join): it beats "catchup, joins at step J" to
# every peer, fetches model@J and its state from the most advanced peer,
# and takes step J with the others, who wait for it there.  Once that
# round's record names it a member (its model checked against the
# others' digests), it beats as live; a join that misses is tried again
# further ahead, the margin doubled, up to the run's end (then it fetches
# the last model) ----
joining=0 jmargin=0 jlast=-1 jseen= best= src= srcid= lastx= leaving=0
# (xu, the front's: the steps of the source's rounds, --every's, else 1)
# peers_newest [OPTIONS...]: $_n, spirt-peer catch-up -P's line: the
# other peer with the newest model (a restarted peer asks until one
# answers, at most --deadline: a link just back may take a moment)
peers_newest() {
	_w=
	[ "$last" -eq 0 ] || _w=--wait
	rc=0
	_n=$(SPIRT_PARENT=$$ spirt-peer catch-up -m "$model" \
	    --deadline "$deadline" $_w "$@" -P "$peers" --peer "$peer" 2>&1) ||
	    rc=$?
	[ "$rc" -lt 126 ] || rc=70
	[ "$rc" -eq 0 ] || die "$rc" "joining: $(first "$_n" spirt-peer)"
}
# behind: at the start, with --beat, this peer joins the others if one
# of them is further on than it is
behind() {
	[ "$beat" -gt 0 ] && [ -n "$peers" ] || return 0
	peers_newest
	read -r best srcid src <<EOF
$_n
EOF
	[ -n "$best" ] && [ "$best" -gt "$last" ] || return 0
	joining=1
}
behind
# the run's last model version, optimiser state and model state
# (spirt-model(5)), made durable; then the
# older durable versions go, which --keep 2 had to leave while they were
# the last durable ones (a power loss would have gone back to them)
persist() {
	# (a peer that leaves, its last round served: its beater's last
	# word says it stops, so that the others leave it out of the next
	# round at once; a run that ends falls silent instead, run.sh.  Its
	# watcher goes first, silently; the beater's end is waited for, up
	# to a beat and 2 s, the last word's own bound)
	if [ "$leaving" -eq 1 ] && [ "$beat" -gt 0 ] && [ -n "$peers" ]; then
		_e=$(($(now) + 2000 + beat))
		printf 'kill w\nstop b\n' >&3
		while ack=$(SPIRT_PARENT=$$ spirt-run -r -u "$_e" <&9); do
			case $ack in "died b "*) break ;; esac
		done
	fi
	run spirt-store -q persist "model/$model@" "opt/$model@" \
	    "mstate/$model@" ||
	    die 74 "could not make model/$model versions durable"
	top=$(newest)
	[ -z "$top" ] || [ "$top" -lt 2 ] ||
	    run spirt-store -q prune -t $((top - 1)) "model/$model@" \
	    "opt/$model@" "mstate/$model@"
}
[ "$last" -lt "$stop" ] || { persist; say "model/$model@$last: already trained ($stop steps)"; exit 0; }

# model versions between checkpoints are volatile (spirt-store(5)): a power
# loss costs at most the last $ckpt steps, never the store; the last
# version of the run is made durable below
# (keep, the front's: 2; with --every H, H + 1: model@s0 of the round
# stays until its outer step, H later)
upd="spirt-update -q -m $model -r $lr $optargs --schedule $sched --lr-total $total --keep $keep --checkpoint $ckpt"
# peers: each step's update applies the global aggregate of the exchange;
# with --every H, local steps apply agg and each round's last step the
# outer step (round)
xch= xsrc=
if [ -n "$peers" ]; then
	[ "$xh" -gt 0 ] || upd="$upd -a gagg"
	xch="spirt-peer exchange -q -m $model -P $peers --deadline $deadline $xargs_"
	# (--beat: the step closes by the quorum of this store's watcher)
	[ "$beat" -eq 0 ] || xch="$xch --beats"
	# (--keep-pulls: what the others sent, stored for inspection)
	[ "$keeppl" -eq 0 ] || xch="$xch --keep-pulls"
	# --every H: the rounds exchange the model's change
	[ "$xh" -eq 0 ] || xsrc="-a delta"
	# each step's round removes the spent ones (before t-1: a peer a
	# step behind still finds t-1), digests too unless kept
	# (--keep-digests); --every prunes in round()
	if [ "$xh" -eq 0 ]; then
		xch="$xch --prune 1"
		[ "$keepdg" -eq 0 ] || xch="$xch --keep-digests"
	fi
fi
# (spent, the front's: --every's spent rounds' digests go too, digest/,
# unless kept, --keep-digests)
# -R: a rerun after a crash between aggregate and update redoes the (identical)
# aggregate; -P: each step removes the spent gradients of steps before t-1;
# --batch: no gradient counts more samples than the assignment in force
# gives its function at its step (wmean; more than -b after a death)
agg="spirt-agg -q -R -P --batch $batch $aggargs"
# peers, a round a step: the aggregate is written as this peer's published
# one, xagg/<t>/<id> (the id of line --peer of the peers file), which the
# exchange publishes as it is instead of copying agg/<t> there (3% of a
# step); never replaced, -R or not.  A Byzantine peer (evaluation only)
# crafts its agg/<t> before the round, so it keeps agg/<t>.
# (aggkey, the front's: xagg then, else agg; self: this peer's id, that
# line's first word, as the front checked it; the beats use it too)
[ "$aggkey" = agg ] || agg="$agg --publish $self"
# slots: warm spirt-grad functions and no attack on the stored gradients:
# each writes its gradient into its slot (to=slot), not grad/<t>/<w>, and
# the step's aggregate takes it from there, the fused update's
# (mean=slots) or spirt-agg's (--slots): no commit a gradient, in every
# warm mode (docs/contracts.md, "Gradient slots"); slots is the front's
[ "$slots" -eq 0 ] || agg="$agg --slots $model"
# (log and plot, the front's, are the model's: STORE.train-MODEL.tsv and
# .png, so models trained in one store keep theirs)
# with peers, two columns more: the last round's time and members in of
# all (the warm exchange's answer; "-" with --cold), as /metrics says
xrow=
[ -z "$xch" ] || xrow="	-	-"
[ -s "$log" ] || printf 'seconds\tstep\tepoch\tloss\ttest_loss\ttest_accuracy%s\n' \
    "${xch:+	exchange_ms	members}" > "$log"
# on resume the clock goes on from the log's last line; lines of steps a
# power loss undid (volatile versions) go
if awk -F'\t' -v l="$last" 'NR > 1 && $2 > l { f = 1 } END { exit !f }' "$log"; then
	awk -F'\t' -v l="$last" 'NR == 1 || $2 <= l' "$log" >"$log.tmp" &&
	    mv "$log.tmp" "$log"
fi
t0=$(awk -F'\t' 'NR > 1 { s = $1 } END { print s + 0 }' "$log")

# flip W: --label-flip if function W flips labels (--byzantine W:labelflip)
flip() {
	[ "$attack" = labelflip ] || return 0
	case $bad in *" $1 "*) echo --label-flip ;; esac
}
# attack T: the malicious functions' gradients of step T replaced
attack() {
	[ -n "$attack" ] && [ "$attack" != labelflip ] || return 0
	run spirt-attack -q -S "$seed" -t "$1" -w "$list" "$attack" ||
	    die 75 "step $1: spirt-attack $attack failed"
}

