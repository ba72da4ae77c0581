# cmd/train/beat.sh - spirt-train's part: heartbeats (--beat). mk/train.mk
# puts cmd/train/loop.sh and the parts, in its order, into one script
# ---- heartbeats (--beat): this peer beats into its store and to every
# other peer of --peers (their URLs, or their stores' paths on one host);
# a watcher on its store declares the silent dead (spirt-beat(1)), and
# the exchange closes each step by its quorum: a dead peer is left out at
# once, a minority stops with 75.  The peers' share of the data follows
# the rounds' member sets, which every member agrees on (the signed
# digests, all or nothing), not the watcher, which each peer has its own
# of (peerout, below). ----
beats_start() {
	[ "$beat" -gt 0 ] && [ -n "$peers" ] || return 0
	# (the other lines' URLs, $others, from spirt-peer peers)
	if [ "$joining" -eq 0 ]; then
		beater -m "$model"
	else
		beater --status catchup
	fi
	_q=
	[ "$quiet" -eq 0 ] || _q=-q
	printf 'start w spirt-beat %s -B %s watch\nguard w\n' "$_q" "$beat" >&3
}
# beater ARGS...: (re)start this peer's beater, spirt-beat beat ARGS,
# spirt-run's child b; the one before is killed without a last word (its
# "stop" would read as a death: the new one's first beat follows at once)
beater() {
	[ "$verbose" -eq 0 ] ||
	    printf '+ spirt-beat -B %s %s beat %s %s\n' "$beat" "$*" "$self" "$(echo $others)" >&2
	printf 'kill b\nstart b spirt-beat -q -B %s %s beat %s %s\nguard b\n' \
	    "$beat" "$*" "$self" "$(echo $others)" >&3
}
# leave_check: before each step, a clean leave: at an epoch's first step
# (and a round's, --every), a request to leave (spirt-train --leave made
# $store.leave) ends the run there, the step not taken: the rounds of the
# epoch before had this peer, none after it does.  The end of the run
# serves the last round until every other peer has its model; then the
# beater's last beat says it stops, and the others leave this peer out
# of the round at once (no deadline), and its workers with it, from this
# step on, as a dead peer's (peerout, --since the epoch's first step).
# The request is taken once: the same command run again rejoins.
leave_check() {
	[ $((t % spe)) -eq 0 ] && [ $((t % xu)) -eq 0 ] &&
	    [ -e "$store.leave" ] || return 0
	rm -f "$store.leave" || die 74 "$store.leave: cannot remove it"
	stop=$t leaving=1
	tell "epoch $((t / spe)) step $t: leaving, as asked (spirt-train --leave): this peer takes no step from here on; the others take its workers out from this step"
}
# join_prepare: before each step while joining: name the step J this
# peer joins at (spirt-peer catch-up --join: a margin ahead of the most
# advanced peer, measured over a beat at first, past the step named
# before; an epoch's first step, or theirs when they wait for it), beat
# it, and fetch model@J (join_fetch); $t is then J
join_prepare() {
	leave_check
	[ "$joining" -eq 1 ] && [ "$t" -lt "$stop" ] || return 0
	while :; do
		_o="--join $jmargin --after $jlast --epoch $spe"
		[ "$jmargin" -ne 0 ] || _o="$_o --pace $beat"
		[ "$xh" -eq 0 ] || _o="$_o --every $xh"
		peers_newest $_o ${jseen:+--seen "$jseen"}
		read -r j best srcid src jmargin jseen <<EOF
$_n
EOF
		[ -n "$best" ] || die 75 "joining: no other peer answers with a model; rerun to retry"
		if [ "$j" -ge "$stop" ]; then
			# the run ends before: its last model, once it is there
			jlast=$stop
			beater --status catchup -t "$stop"
			join_fetch "$stop" --last || continue
			say "the run ended before this peer could join: it has the others' model/$model@$stop"
			t=$stop joining=0
			# (its beats say so: the others, serving till then, end)
			beater -m "$model"
			return 0
		fi
		jlast=$j
		beater --status catchup -t "$j"
		say "joining at step $j (the most advanced peer, $srcid, is at $best)"
		join_fetch "$j" && break
		jmargin=$((jmargin * 2))
	done
	t=$j
}
# join_fetch J [--last]: model@J, opt@J and mstate@J (a model with state,
# spirt-model(5)) from $src into this store, once $src has them
# (spirt-peer catch-up); 1 if $src went past step J's round first (the
# join missed) or died (another is asked)
join_fetch() {
	# (SPIRT_PARENT: it waits up to --deadline for $src; a driver killed
	# meanwhile ends it, so that no catch-up of a dead run writes model@J
	# unseen; a model@J already here is one a run before this one fetched)
	rc=0
	e=$(SPIRT_PARENT=$$ spirt-peer catch-up -q -m "$model" -t "$1" ${2:-} \
	    --every "$xu" --deadline "$deadline" "$srcid" "$src" 2>&1) || rc=$?
	[ "$rc" -lt 126 ] || rc=70
	case $rc in
	0) say "caught up from $src: ${e:-model/$model@$1 (fetched before)} (this peer had @$last)" ;;
	69) return 1 ;;
	75) die 75 "joining: $srcid did not go on in $deadline ms (--deadline); rerun to retry" ;;
	*) die "$rc" "joining: $(first "$e" spirt-peer)" ;;
	esac
	last=$1
	redo_from "$1"
}
# join_check T: after the exchange of step T while joining: the round's
# record names this peer a member (it joined: it beats as live), or the
# others left it out (it joins again further ahead, once step T is done)
join_check() {
	[ "$joining" -eq 1 ] || return 0
	if spirt-store get "gagg/$1/round" 2>/dev/null |
	    tr -c '[:print:]\n' ' ' | grep -q "^peer=$self self\$"; then
		joining=0
		beater -m "$model"
		say "rejoined at step $1: its model checked against the others' digests, it beats as live"
	else
		jmargin=$((jmargin * 2))
		say "joining: the others left this peer out of step $1; it joins again further on"
	fi
}
