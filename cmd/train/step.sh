# cmd/train/step.sh - spirt-train's part: a step, the evaluation, the training
# loop, the plot. mk/train.mk puts cmd/train/loop.sh and the parts, in its
# order, into one script
# peerout T: with --beat, before any gradient of step T, the peers' share
# of the data from the round just closed (that of step T-1; with --every
# H, of the round of H steps before T).  Every member of that round holds
# the same member set (all or nothing, from the signed digests; its
# record gagg/<r>/round names each peer used, and this one "self"), so
# every peer reassigns the same workers at the same step with no round
# of its own: those of a peer of the map that was not a member are out
# for the rest of the epoch, their samples from the round's first step
# on (none of their gradients since was applied) spread over the live
# ones from step T (spirt-shard -t T --since R --group).  At an epoch's
# first step every peer holds its own share again (back): the dead and
# the rejoined get theirs back there, and one still dead is out again
# after that step.  This peer, if the round left it out, is out too: it
# trains nothing until the next epoch's first step, where it joins again
# (join_prepare; it returns 1, the step not taken).
peerout() {
	[ "$beat" -gt 0 ] && [ -n "$peers" ] && [ "$joining" -eq 0 ] ||
	    return 0
	[ $(($1 % spe)) -ne 0 ] && [ $(($1 % xu)) -eq 0 ] &&
	    [ "$1" -ge "$xu" ] || return 0
	_r=$(($1 - xu)) _e=$(($1 / spe * spe))
	# (a round of every member, as its warm exchange said: no one out,
	# and no process to ask the record, 14% of a --beat run's CPU)
	[ "$xall" != "$_r" ] || return 0
	_rec=$(spirt-store get "gagg/$_r/round" 2>/dev/null |
	    tr -c '[:print:]\n' ' ')
	case $_rec in
	'') return 0 ;;         # (no round: nothing to go on)
	*"
peer=$self self"*) ;;
	*)
		tell "step $1: this peer was left out of the round of step $_r: its samples go to the others for the rest of epoch $(($1 / spe)); it joins again at an epoch's first step"
		joining=1 jmargin=0 jlast=$(($1 - 1))
		return 1 ;;
	esac
	_new= _ids=
	# (oids: ID:N of each other peer, N its line; N x M its first worker)
	for _p in $oids; do
		_id=${_p%:*} _w=$((${_p#*:} * fns))
		! has "$pdead" "$_w" || continue
		case $_rec in *"
peer=$_id used"*) continue ;; esac
		_i=0
		while [ "$_i" -lt "$fns" ]; do
			pdead="$pdead$((_w + _i)) " _new="$_new $((_w + _i))"
			_i=$((_i + 1))
		done
		_ids="$_ids $_id"
	done
	[ -n "$_new" ] || return 0
	[ "$_r" -ge "$_e" ] || _r=$_e
	# a revision that holds from this very step is there already: this
	# driver made it before it was stopped, in this step (every peer
	# makes the same one from the signed round), so it holds; making it
	# again would be refused (--since before its step)
	if [ "$as_rj" -gt 0 ] && [ "$as_re" -eq $(($1 / spe)) ] &&
	    [ "$as_rj" -eq $(($1 % spe)) ]; then
		tell "step $1: peers$_ids out of the round of step $(($1 - xu)): the reassignment of this step is in the store already (revision $as_rev)"
		return 0
	fi
	rc=0
	_a=$(run spirt-shard -q -d "$train" -t "$1" -b "$batch" --since "$_r" \
	    --group "$fns" --live "$(livelist)" --holders "$w0,$fns") || rc=$?
	[ "$rc" -eq 0 ] || die "$rc" "step $1: could not reassign the samples of peers$_ids"
	assign_set "$_a"
	tell "step $1: peers$_ids out of the round of step $(($1 - xu)): their workers'$_new samples from step $_r go to the live ones (revision $as_rev)"
}
# back T: at an epoch's first step the dead functions start again and get
# work back, and a revision from this epoch holds every live one
back() {
	[ $(($1 % spe)) -eq 0 ] || return 0
	for _x in $dead; do
		[ "$cold" -eq 1 ] || fn_start "$_x"
		live="$live$_x "
		tell "epoch $(($1 / spe)) step $1: function $_x is back"
	done
	dead=
	# (and every other peer's share its own: peerout)
	[ -z "$pdead" ] ||
	    tell "epoch $(($1 / spe)) step $1: the workers$(printf ' %s' $pdead) of peers out of the last epoch get their samples back"
	pdead=
	holders "$1"
	for _x in $live; do
		has "$_h" "$_x" || { reassign "$1"; return 0; }
	done
	for _x in $as_oout; do
		has "$xout" "$_x" || { reassign "$1"; return 0; }
	done
}

# exchange T: with --peers, the round of step T with the other peers; a
# peer whose model differs stops (65), a round short of peers is 75
exchange() {
	{ [ -n "$xch" ] && [ "$xh" -eq 0 ]; } || return 0
	if [ -n "$bpeer" ]; then
		byzpeer_exchange "$1"   # (evaluation only)
	else
		# (a joining peer whose round failed joins again further on:
		# the step is not applied)
		xstep "$1" "step $1: exchange" || { stepped=0; return 0; }
	fi
	lastx=$1
}

# round T: with --every H, the step T that ends a round (its H-th local
# step, or the run's last) ends it: the step writes delta/S, the change
# since the round's first model model@S, not model@T+1; the peers
# exchange the deltas as the aggregates of step S; then the outer step
# model@T+1 = model@S - gagg/S (SGD with lr 1: the mean of the deltas
# makes it the mean of the peers' models).  model@S and model@T+1 are
# the same on every peer; the versions between are each peer's own.
# Both steps are requests to the warm spirt-update (its words delta=,
# outer=, agg=), as the local steps are: no process a round.
# Returns 1 when T ends no round (the caller updates as usual).
round() {
	[ "$xh" -gt 0 ] || return 1
	[ $((($1 + 1) % xh)) -eq 0 ] || [ $(($1 + 1)) -eq "$stop" ] || return 1
	s0=$(($1 / xh * xh))
	rstep "$1 delta=$s0" "step $1: the round's delta" -t "$1" --delta "$s0"
	xstep "$s0" "step $1: exchange of round $s0" || { stepped=0; return 0; }
	lastx=$s0
	join_check "$s0"
	set -- "$1" $(($1 + 1 - s0))
	rstep "$s0 outer=$2 agg=gagg" "step $1: the outer step of round $s0" \
	    -a gagg -t "$s0" --outer "$2"
	# spent rounds: those before the previous one (a peer a round behind
	# still finds it)
	if [ "$s0" -ge $((2 * xh)) ] && { [ "$xh" -ge 10 ] ||
	    [ $((s0 / xh % 10)) -eq 9 ]; }; then
		run spirt-store -q prune -t $((s0 - xh)) xagg/ gagg/ $spent \
		    delta/ || die 74 "step $1: could not prune spent rounds"
	fi
	return 0
}

# rstep WORDS WHAT OPTIONS...: one of a round's steps: the request WORDS
# to the warm spirt-update, or with --cold a spirt-update with OPTIONS
rstep() {
	_rq=$1 _what=$2
	shift 2
	if [ "$cold" -eq 1 ]; then
		run $upd "$@" || die 75 "$_what failed"
		return 0
	fi
	[ "$verbose" -eq 0 ] || printf '+ %s -i <<< %s\n' "$upd" "$_rq" >&2
	echo "send upd $_rq" >&3
	wait_done spirt-update
}

# fused, fwords: whether the warm update aggregates the step itself
# (step), and its rule as words after mean= (spirt-update(1)): spirt-agg's
# -r, --trim, --byzantine, --select and --batch, none for the mean; not
# cclip (its centre is agg/<t-1>), bucketing or worker momentum, which
# spirt-agg makes
fused=0 fwords=
if [ "$bucket" -le 1 ] && [ -z "$wmom" ]; then
	fused=1
	case $rule in
	mean) ;;
	wmean|median|norm) fwords=" rule=$rule batch=$batch" ;;
	trim:*) fwords=" rule=trim trim=${rule#trim:} batch=$batch" ;;
	krum:*) fwords=" rule=krum byzantine=${rule#krum:} batch=$batch" ;;
	mkrum:*) _r=${rule#mkrum:}
		fwords=" rule=mkrum byzantine=${_r%%:*} select=${_r#*:} batch=$batch" ;;
	*) fused=0 ;;
	esac
fi

# step T: one synchronous SPIRT round; $stepped is 0 after it if the
# round failed while this peer joins (nothing of it applied)
step() {
	peerout "$1" || { stepped=0; return 0; }
	back "$1"
	if [ "$cold" -eq 1 ]; then
		cold_grads "$1"
		attack "$1"
		run $agg -t "$1" || die 75 "step $1: aggregation failed"
		[ "$xh" -eq 0 ] || { round "$1" || run $upd -t "$1" ||
		    die 75 "step $1: update failed"; return; }
		exchange "$1"
		[ "$stepped" -eq 1 ] || return 0
		join_check "$1"
		run $upd -t "$1" || die 75 "step $1: update failed"
		return
	fi
	# one peer, no --every, a rule of $fused: the warm spirt-update
	# aggregates the gradients itself, in its step's transaction
	# (mean=grad and the rule's words): no agg/<t>, one commit and one
	# request fewer (cclip's centre, the exchange and --every read
	# agg/<t>: they keep spirt-agg).  With $slots the functions write
	# their slots (to=slot), which the update (mean=slots) or spirt-agg
	# (--slots) takes: no commit a gradient
	_mean= gword=
	[ "$slots" -eq 0 ] || gword=" to=slot"
	if [ -z "$xch" ] && [ "$xh" -eq 0 ] && [ "$fused" -eq 1 ]; then
		_mean=grad
		[ "$slots" -eq 0 ] || _mean=slots
		_mean=$_mean$fwords
	fi
	# the aggregation or the fused update chained, but after an attack
	set -- "$1" agg "$1" spirt-agg
	[ -z "$_mean" ] || set -- "$1" upd "$1 mean=$_mean" spirt-update
	[ "$verbose" -eq 0 ] || [ -z "$_mean" ] ||
	    printf '+ %s -i <<< %s\n' "$upd" "$3" >&2
	if [ -z "$attack" ] || [ "$attack" = labelflip ]; then
		grads "$1" "$2 $3"
	else
		grads "$1"
		attack "$1"
		echo "send $2 $3" >&3
		ack=
	fi
	case $ack in "stepped "*) ;; *) wait_done "$4" ;; esac
	aggloss=-
	case $ack in *loss=*) aggloss=${ack##*loss=} ;; esac
	[ -z "$_mean" ] || return 0
	[ "$xh" -eq 0 ] || ! round "$1" || return 0
	exchange "$1"
	[ "$stepped" -eq 1 ] || return 0
	join_check "$1"
	echo "send upd $1" >&3
	wait_done spirt-update
}

# evaluate T: test loss and accuracy of model@T, logged.  The evaluation
# function ($evcmd, words split, never globbed) is run by spirt-run (run
# ev: --deadline to end, or killed, late); its answer must hold loss=L
# and accuracy=A lines (A from 0 to 1), or the training stops with 75
# (spirt-function(7))
evaluate() {
	echo "run ev $evcmd -q -m $model -t $1" >&3
	e=
	while :; do
		read -r ack <&9 || die 70 "spirt-run went away"
		case $ack in
		"answer ev "*) e="$e${ack#answer ev }
" ;;
		"died ev "*status=0) break ;;
		"died ev "*status=*) die 75 "step $1: $evcmd exited with status ${ack##*=}; rerun to resume" ;;
		"died ev "*signal=*) die 75 "step $1: $evcmd exited with status $((128 + ${ack##*=})); rerun to resume" ;;
		"late ev "*) die 75 "step $1: $evcmd: no answer within --deadline $deadline ms; rerun to resume" ;;
		"refused "*" ev: "*) die 75 "step $1: $evcmd: ${ack##*: }; rerun to resume" ;;
		*) aside "step $1" ;;
		esac
	done
	e=$(printf '%s' "$e" | awk -F= -v tg="$target" '
		function num(x) {
			return x ~ /^-?[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?$/
		}
		$1 == "loss" { l = $2 } $1 == "accuracy" { a = $2 }
		END {
			# (a model gone astray: a loss of nan or inf)
			if (!(num(l) || tolower(l) ~ /^[-+]?(nan|inf)/) ||
			    !num(a) || a + 0 < 0 || a + 0 > 1)
				exit 1
			print l, a, (tg > 0 && a >= tg)
		}') || die 75 "step $1: $evcmd: expected loss=L and accuracy=A lines (A from 0 to 1); rerun to resume"
	set -- "$1" $e
	acc=$3 reached=$4
	printf '%s\t%s\t%s\t%s\t%s\t%s%s\n' "$clock" "$1" "$ep" "$loss" "$2" "$3" \
	    "$xrow" >> "$log"
	say "epoch $ep step $1: test loss $2, accuracy $3"
}

[ -t 2 ] && [ "$quiet" -eq 0 ] && tty=1
# the rule as run, and the malicious functions if any, named in the log
what="rule $rule"
[ "$bucket" -le 1 ] || what="$what, buckets of $bucket"
[ -z "$attack" ] || [ -n "$bpeer" ] || what="$what, byzantine functions $list: $attack (evaluation only)"
[ -n "$prule" ] && [ "$prule" = mean ] || what="$what, across peers $prule"
[ -z "$bpeer" ] || what="$what, byzantine peer: $bpeer (evaluation only)"
say "training $model ($spec) in $store: steps $last..$stop of $total, $fns functions x batch $batch, $opt lr $lr, $what"
# the clock in ms: the log's seconds go on from t0; evaluations are left
# out; shell arithmetic only, since every process here costs a millisecond
t0=$(awk -v s="$t0" 'BEGIN { printf "%.0f", s * 1e3 }')
start=$(now) evalms=0 loss=- acc=0 lastp=$start aggloss=- reached=0
# progress and log every tick steps; the spent gradients go at every step
# (spirt-agg -P), old model versions too (spirt-update --keep)
tick=10
[ "$cold" -eq 1 ] || tick=50

t=$last
clock=$(seconds "$t0")
while [ "$t" -lt "$stop" ]; do
	join_prepare
	[ "$t" -lt "$stop" ] || break
	stepped=1
	step "$t"
	# (a joining peer's step whose round failed: it joins again)
	[ "$stepped" -eq 1 ] || continue
	t=$((t + 1))
	[ $((t % tick)) -eq 0 ] || [ $((t % every)) -eq 0 ] ||
	    [ "$t" -eq "$stop" ] || continue
	n=$(now)
	if [ "$cold" -eq 1 ]; then
		_k=agg/$((t - 1))
		[ "$aggkey" = agg ] || _k=xagg/$((t - 1))/$self
		loss=$(spirt-store show "$_k" | sed -n 's/^loss=//p')
	else
		loss=$aggloss
	fi
	c=$((t0 + n - start - evalms))
	clock=$(seconds "$c") ep=$(seconds $((t * 1000 / spe)))
	# every 2 s a progress line (a bar on a terminal)
	if [ "$quiet" -eq 0 ] && [ $((n - lastp)) -ge 2000 ]; then
		lastp=$n
		awk -v t="$t" -v T="$stop" -v e="$spe" -v l="$loss" \
		    -v r="$(( (t - last) * batch * fns * 1000 / (c - t0 + 1) ))" \
		    -v tty="$tty" 'BEGIN {
			line = sprintf("epoch %.2f step %d/%d loss %s %.0f samples/s",
			    t / e, t, T, l, r)
			if (tty) {
				w = 30; f = int(w * t / T); bar = ""
				for (i = 0; i < w; i++)
					bar = bar (i < f ? "#" : ".")
				printf "\r[%s] %3d%% %s ", bar, 100 * t / T,
				    line
			} else
				print "spirt-train: " line
		}' >&2
	fi
	if [ $((t % every)) -ne 0 ] && [ "$t" -ne "$stop" ]; then
		printf '%s\t%s\t%s\t%s\t-\t-%s\n' "$clock" "$t" "$ep" "$loss" \
		    "$xrow" >> "$log"
		continue
	fi
	evaluate "$t"
	evalms=$((evalms + $(now) - n))
	if [ "$reached" -eq 1 ]; then
		say "reached accuracy $acc >= $target at step $t, ${clock}s"
		break
	fi
done
[ "$tty" -eq 0 ] || printf '\r\033[K' >&2
# serving: the others may still pull our last round; stop once each has
# combined it (its gagg/<lastx>: the last step's, or with --every the
# last round's first step's, which is what the round is named by), or
# after --deadline, or once its server is gone.  With --beat, once each
# other peer the watcher saw beats this step or a later one (it has the
# last model) and is not joining: one behind (restarted after it died,
# even after its last round: it has that gagg and not the model) catches
# up from the peers that serve, and once they all ended there would be
# no one to catch up from.  A member that does not come back costs that
# wait, as one that does not answer does without --beat.
if [ -n "$srv" ] && [ "$t" -gt 0 ]; then
	end=$(($(now) + deadline))
	if [ "$beat" -gt 0 ]; then
		while spirt-beat ls 2>/dev/null | awk -F'\t' -v me="$self" \
		    -v t="$t" '$1 != me && $2 == "peer" && ($3 == "joining" ||
			$5 == "-" || $5 + 0 < t) { b = 1 }
			END { exit !b }'; do
			pause 200 "$end" || break
		done
	elif [ -n "$lastx" ]; then
		# (69: no server there any more: that peer ended, having
		# combined the round, or died, and waiting would not help it;
		# the slowest peer to end would otherwise wait for --deadline
		# on those that ended before it.  Its record gagg/<t>/round
		# asked, written with gagg/<t> in one transaction (a few
		# hundred bytes), not gagg/<t> itself: that moved S bytes from
		# every other peer, (P - 1) S a peer and run, bench/links.sh)
		for u in $urls; do
			while :; do
				rc=0
				SPIRT_TIMEOUT=2s spirt-store -q -s "$u" get -f \
				    "gagg/$lastx/round" >/dev/null 2>&1 || rc=$?
				{ [ "$rc" -ne 0 ] && [ "$rc" -ne 69 ]; } || break
				pause 100 "$end" || break
			done
		done
	fi
fi
done_=1
persist

# ---- a plot of loss and test accuracy against time, next to the store ----
if command -v gnuplot >/dev/null 2>&1; then
	gnuplot <<GP 2>/dev/null || say "warning: gnuplot failed; the log is $log"
set terminal pngcairo size 900,500 noenhanced
set output "$plot"
set datafile separator "\t"
set datafile missing "-"
set key top right box opaque
set xlabel "training time (s)"
set ylabel "loss"
set y2label "test accuracy"
set y2range [*:1]
set ytics nomirror
set y2tics
set grid
set title "spirt-train $model ($spec), $fns functions x batch $batch, $opt lr $lr, $what"
plot "$log" using 1:4 with lines lc rgb "#c8b4e6" title "train loss (one step)", \
     "$log" using 1:4 smooth bezier lw 2 lc rgb "#6a3d9a" title "train loss (smoothed)", \
     "$log" using 1:5 with linespoints lw 2 lc rgb "#1b9e77" title "test loss", \
     "$log" using 1:6 axes x1y2 with linespoints lw 2 lc rgb "#d95f02" title "test accuracy"
GP
fi
say "model/$model@$t; log $log; plot $plot"
