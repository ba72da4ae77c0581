# cmd/train/workers.sh - spirt-train's part: workers within a peer: deaths,
# reassignment, the gradients. mk/train.mk puts cmd/train/loop.sh and the
# parts, in its order, into one script
# ---- workers within a peer (docs/contracts.md, The assignment) ----
# A function that dies (its warm process ends, or a cold invocation
# fails) is declared dead at once: its samples go to the live functions
# from that step on (spirt-shard -t T --live: revision r+1, the rest of
# the epoch and the map from the next), the survivors compute the step
# again under it (the gradients of r are stale: spirt-agg leaves them
# out), and training goes on.  At the next epoch's first step it starts
# again and gets work back (spirt-shard --epoch E --live).  Functions are
# numbered 0..M-1 here; the store's workers are w0 + w.  The other peers'
# workers stay as the store's full part has them, but those of a peer
# out of a round (--beat: peerout).
live= dead= later= ruleok=$fns gword=
_x=0
while [ "$_x" -lt "$fns" ]; do live="$live$_x " _x=$((_x + 1)); done
# (no $(...) on the way of a step: each would cost a process)
has() { case " $1 " in *" $2 "*) return 0 ;; esac; return 1; }
drop() {        # drop VAR X: X out of the list in variable VAR
	eval "_dl=\$$1"
	_dr=
	for _dx in $_dl; do [ "$_dx" = "$2" ] || _dr="$_dr$_dx "; done
	eval "$1=\$_dr"
}
# livelist: the store's live workers, comma-separated: this peer's live
# functions, and the other peers' workers (oall), but those of peers out
# of the map for the rest of the epoch (pdead: peerout)
pdead= oall=
_x=0
while [ "$_x" -lt "$nw" ]; do
	[ "$_x" -ge "$w0" ] && [ "$_x" -lt $((w0 + fns)) ] || oall="$oall$_x "
	_x=$((_x + 1))
done
livelist() {
	_l= _i=0
	while [ "$_i" -lt "$fns" ]; do
		has "$dead" "$_i" || _l="$_l${_l:+,}$((w0 + _i))"
		_i=$((_i + 1))
	done
	for _x in $oall; do
		has "$pdead" "$_x" || _l="$_l${_l:+,}$_x"
	done
	printf '%s' "$_l"
}
# assign_read: which of this peer's functions hold a list: in the rest
# part (epoch as_re from its step as_rj, 0: none) and the full part (from
# epoch as_fe), the other peers' workers the full part leaves out
# (as_oout), the revision as_rev, from spirt-shard --holders (assign_set),
# which a reassignment prints too
assign_read() {
	_a=$(spirt-shard -d "$train" --holders "$w0,$fns") ||
		die 65 "data/$train/assign: cannot read it"
	assign_set "$_a"
}
assign_set() {
	IFS=: read -r as_rev as_re as_rj as_fe as_rest as_full _ as_oout <<EOF
$1
EOF
}
assign_read
# pdead_map: pdead as the store's map has it: the other peers' workers
# its full part holds out, as its last reassignment left them, until the
# next epoch (a resumed run; a revision that holds again), but a proven
# liar's (xout: out of oall for good, xexclude)
xout=
pdead_map() {
	pdead=$as_oout
	for _x in $xout; do drop pdead "$_x"; done
}
pdead_map
# redo_from T: the steps from T are done (again) on this model: a run
# that starts at its newest version, a peer that joins at the others'
# step.  A revision of the assignment made at a later step belongs to a
# timeline this model is not on (a power loss undid the volatile
# versions after it; a rejoiner's own store went further than the step
# the others stand at): the revision that held at T holds again
# (spirt-shard --redo; nothing changes when the current one holds).  A
# function dead in this run that the revision gives samples at T gives
# them to the live ones at once, as when it died
redo_from() {
	rc=0
	_a=$(run spirt-shard -q -d "$train" --redo -t "$1" -b "$batch" \
	    --holders "$w0,$fns") || rc=$?
	[ "$rc" -eq 0 ] || die "$rc" "step $1: no assignment revision of this step is kept (data/$train/assign)"
	_rev=$as_rev
	assign_set "$_a"
	[ "$as_rev" = "$_rev" ] || {
		tell "step $1: done again: the assignment that held there holds again (revision $as_rev)"
		pdead_map
		[ $(($1 % spe)) -ne 0 ] || return 0
		holders "$1"
		for _x in $dead; do
			has "$_h" "$_x" || continue
			reassign "$1"
			return 0
		done
	}
}
# holders T: $_h, the functions with samples at step T
holders() {
	_e=$(($1 / spe)) _j=$(($1 % spe)) _h=
	if [ "$as_rj" -gt 0 ] && [ "$_e" -eq "$as_re" ] && [ "$_j" -ge "$as_rj" ]; then
		_h=$as_rest
	elif [ "$_e" -ge "$as_fe" ]; then
		_h=$as_full
	fi
}
# reassign T: the next revision for the live functions, from step T (an
# epoch's first step: from that epoch, the rows of --epoch's)
reassign() {
	[ -n "$live" ] || die 75 "step $1: every function is dead; rerun to resume"
	rc=0
	_a=$(run spirt-shard -q -d "$train" -t "$1" -b "$batch" --group "$fns" \
	    --live "$(livelist)" --holders "$w0,$fns") || rc=$?
	[ "$rc" -eq 0 ] || die "$rc" "step $1: could not reassign the samples of functions$(printf ' %s' $dead)"
	assign_set "$_a"
}
# (the run's first step: as it is done again, the revision of its step)
redo_from "$last"
# rulefor N: the rule holds for N gradients, else stop saying why
rulefor() {
	[ "$1" -ne "$ruleok" ] || return 0
	rc=0
	e=$(spirt-agg $aggargs --check-rule "$1" 2>&1) || rc=$?
	[ "$rc" -lt 126 ] || rc=70
	[ "$rc" -eq 0 ] || die "$rc" "step $t: $1 functions left: -a $rule: $(first "$e" spirt-agg)"
	ruleok=$1
}
# declare_dead W HOW: function W is dead, HOW says how it ended
declare_dead() {
	drop live "$1"
	dead="$dead$1 "
	tell "step $t: $2: declared dead; its samples go to the other functions"
}
# bury NAME:pid=P:HOW: a warm function that ended, or was late (ended)
bury() {
	died "$1"
	_n=${1%%:*}
	declare_dead "${_n#g}" "$how"
}
# busy T: $busy the live functions with samples at T, $n of them, $gl g0,..
busy() {
	busy= n=0 gl=
	holders "$1"
	for _x in $_h; do
		has "$live" "$_x" || continue
		busy="$busy$_x " n=$((n + 1)) gl="$gl${gl:+,}g$_x"
	done
	[ "$n" -gt 0 ] || die 75 "step $1: no live function has samples (functions$(printf ' %s' $dead) dead); rerun to resume"
	rulefor "$n"
}
# again T: after deaths during step T, the samples reassigned from T
again() {
	reassign "$1"
	busy "$1"
	tell "step $1: revision $as_rev: functions$(printf ' %s' $busy) compute it again"
}
# grads T [NAME TEXT]: the gradients of step T, the live functions' with
# samples (into grad/<T>/<w>, or their slots with $gword), one fan of
# spirt-run's, NAME TEXT chained ($ack: "stepped NAME ANSWER", or "fanned
# N" and NAME's answer still to read); when one dies meanwhile, or does
# not answer within --deadline (spirt-run has ended it: nothing it writes
# later counts as work), nothing is chained, it is declared dead and the
# survivors compute the step again under the new revision
grads() {
	if [ -n "$later" ]; then
		for _d in $later; do bury "$_d"; done
		later=
		reassign "$1"
	fi
	while :; do
		busy "$1"
		echo "fan $gl $1$gword${2:+ then $2}" >&3
		_pend=$busy _gone=0
		while [ -n "$_pend" ]; do
			read -r ack <&9 || die 70 "spirt-run went away"
			case $ack in
			"stepped "*|"fanned "*) _pend= ;;
			"died g"*|"late g"*)
				ended
				bury "$_e"
				_n=${_e%%:*}
				drop _pend "${_n#g}"
				_gone=1 ;;
			"answer g"*error=*)
				_a=${ack#answer }
				die 75 "step $1: ${_a#* }" ;;
			"answer g"*" step=$1 worker="*)
				_x=${ack#answer g}
				drop _pend "${_x%% *}" ;;
			*) aside "step $1" ;;
			esac
		done
		[ "$_gone" -eq 1 ] || return 0
		again "$1"
	done
}
# fan_grads T: with SPIRT_FANOUT, step T's busy functions through it.
# The runner has its own retries (parallel --retries): if it fails, the
# step fails (75), nothing of it applied, and a rerun resumes.
fan_grads() {
	# ($fanout's words are split, never globbed)
	set -f
	for _x in $busy; do echo $((w0 + _x)); done | run $fanout \
	    $fncmd -q -m "$model" -t "$1" -w {} -b "$batch" \
	    -S "$seed" || die 75 "step $1: a gradient function failed"
	set +f
}
# cold_grads T: the same with one process per invocation, each a "run"
# of spirt-run's: past --deadline from its start it is killed (late);
# one that fails is a dead function
cold_grads() {
	while :; do
		busy "$1"
		if [ -n "${SPIRT_FANOUT-}" ]; then
			fan_grads "$1"
			return 0
		fi
		for _x in $busy; do
			set -- "$1" "$fncmd -q -m $model -t $1 -w $((w0 + _x)) -b $batch -S $seed $(flip "$_x")"
			[ "$verbose" -eq 0 ] || printf '+ %s\n' "$2" >&2
			echo "run c$_x $2" >&3
		done
		_pend=$busy _gone=0
		while [ -n "$_pend" ]; do
			read -r ack <&9 || die 70 "spirt-run went away"
			case $ack in
			"died c"*" status=0") ;;
			"died c"*|"late c"*)
				ended
				cold_dead "$_e"
				_gone=1 ;;
			"answer c"*) continue ;;
			*) aside "step $1"; continue ;;
			esac
			_n=${ack#* c}
			drop _pend "${_n%% *}"
		done
		[ "$_gone" -eq 1 ] || return 0
		again "$1"
	done
}
# cold_dead NAME:pid=P:HOW: the cold function of NAME, cW, is dead
cold_dead() {
	_n=${1%%:*} _h=${1##*:}
	case $_h in
	signal=*) how="was killed by signal ${_h#signal=}" ;;
	status=*) how="exited with status ${_h#status=}" ;;
	*) how="did not end within --deadline $deadline ms" ;;
	esac
	declare_dead "${_n#c}" "cold $fncmd -w $((w0 + ${_n#c})) $how"
}
