#!/usr/bin/env bats
# 55-beat: spirt-beat beats, watches, lists and checks; --on-dead runs once
# per death with a deadline; beats through a peer's URL are the member's
# own only.  Budgets are small (a beat every 100 ms); no assertion is on
# time: each wait is for a state, bounded.

load helper

teardown() {
	for p in $BEATER $WATCHER $SRV; do
		kill -TERM "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	:
}


# state M: member M's state in spirt-beat ls
state() {
	spirt-beat ls | awk -F'\t' -v m="$1" '$1 == m { print $3 }'
}
is() { [ "$(state "$1")" = "$2" ]; }

beat_field() {      # beat_field KEY NAME: NAME= in the text of record KEY
	spirt-store get "$1" | "$PYTHON" -c "$PYREC
r = st.read_record(sys.stdin.buffer)
for l in bytes(r.array).decode().splitlines():
    if l.startswith('$2='): print(l[len('$2='):])"
}

@test "beat: a record of text, its step the newest model's, its sequence counting" {
	spirt-init -q -m m mlp:4-3
	run -0 spirt-beat -B 50 -c 3 -m m beat p1
	run -0 spirt-store ls beat/
	assert_output --partial "beat/p1	u8"
	[ "$(beat_field beat/p1 member)" = p1 ]
	[ "$(beat_field beat/p1 role)" = peer ]
	[ "$(beat_field beat/p1 status)" = live ]
	[ "$(beat_field beat/p1 step)" = 0 ]
	[ "$(beat_field beat/p1 seq)" = 2 ]
	[ "$(beat_field beat/p1 interval)" = 50 ]
	b1=$(beat_field beat/p1 boot)
	[ ${#b1} -eq 32 ]
	# a function at a given step; every start draws a new boot id
	run -0 spirt-beat -c 1 -R function -t 12 beat f3
	[ "$(beat_field beat/f3 role)" = function ]
	[ "$(beat_field beat/f3 step)" = 12 ]
	run -0 spirt-beat -c 1 -m m beat p1
	[ "$(beat_field beat/p1 seq)" = 0 ]
	[ "$(beat_field beat/p1 boot)" != "$b1" ]
	run -0 spirt-store show beat/p1
	assert_line "step=0"
}

@test "watch: live, suspect, dead; --on-dead runs once with its placeholders; ls; --check" {
	spirt-init -q -m m mlp:4-3
	spirt-beat -q -B 100 -m m beat p1 &
	BEATER=$!
	spirt-beat -q -R function -t 5 -c 1 beat f2
	spirt-beat -B 100 --on-dead 'echo "dead %m %r %s %%" >>dead.log' \
	    watch 2>watch.log &
	WATCHER=$!
	until_ 100 is p1 live
	until_ 100 is f2 dead
	run -0 spirt-beat --check p1
	assert_output ""
	run -1 spirt-beat --check f2
	assert_output ""
	run -1 spirt-beat --check nobody
	# ls: member, role, state, age, step, seq
	run -0 spirt-beat ls
	assert_line --regexp '^f2	function	dead	[0-9]+\.[0-9]	5	0$'
	assert_line --regexp '^p1	peer	live	[0-9]+\.[0-9]	0	[0-9]+$'
	# p1 stops beating (SIGKILL: no last word): suspect, then dead
	kill -KILL "$BEATER"
	wait "$BEATER" || :
	BEATER=
	until_ 100 is p1 dead
	# (ls reads the state from the record as time goes on: the
	# watcher's next pass says it)
	until_ 50 grep -q '^spirt-beat: warning: p1: dead: no beat for too long$' watch.log
	grep -q '^spirt-beat: warning: p1: suspect: no beat for [0-9.]* s$' watch.log
	until_ 50 test "$(wc -l <dead.log)" -eq 2
	sort dead.log >got
	printf 'dead f2 function 5 %%\ndead p1 peer 0 %%\n' >want
	diff -u want got
	# a watcher that comes back declares no death twice
	kill -TERM "$WATCHER"
	wait "$WATCHER"
	WATCHER=
	run -0 spirt-beat -B 100 -c 4 --on-dead 'echo again %m >>dead.log' watch
	[ "$(wc -l <dead.log)" -eq 2 ]
	# ls with a budget of its own: the same ages, other states
	run -0 spirt-beat --dead 3600000 --suspect 3000000 ls
	assert_line --regexp '^p1	peer	live	'
}

@test "watch: a member that stops says so and is dead at once; one that returns is declared again" {
	spirt-init -q -m m mlp:4-3
	spirt-beat -q -B 100 -t 1 beat p2 &
	BEATER=$!
	spirt-beat -B 100 --dead 600000 --suspect 300000 \
	    --on-dead 'echo %m >>dead.log' watch 2>watch.log &
	WATCHER=$!
	until_ 100 is p2 live
	caught "$BEATER" 15 || until_ 50 caught "$BEATER" 15
	kill -TERM "$BEATER"
	wait "$BEATER"
	BEATER=
	[ "$(beat_field beat/p2 status)" = stop ]
	# dead long before 10 minutes of silence: it said it stops
	until_ 100 is p2 dead
	until_ 50 grep -q '^spirt-beat: warning: p2: dead: it stopped$' watch.log
	until_ 50 test -s dead.log
	# it comes back (a new boot): live again, then dead again
	spirt-beat -q -B 100 -t 2 beat p2 &
	BEATER=$!
	until_ 100 is p2 live
	until_ 50 grep -q '^spirt-beat: p2: live$' watch.log
	kill -TERM "$BEATER"
	wait "$BEATER"
	BEATER=
	until_ 100 is p2 dead
	until_ 50 test "$(wc -l <dead.log)" -eq 2
}

@test "beat: a beater whose starter is killed falls silent, with no last word" {
	spirt-init -q -m m mlp:4-3
	bash -c 'spirt-beat -q -B 50 -t 0 beat p9 & echo $! >bpid; exec sleep 60' &
	sh=$!
	until_ 100 test -s bpid
	until_ 100 sh -c '[ "$(spirt-store get beat/p9 2>/dev/null | tr -c "[:print:]" "\n" | sed -n "s/^seq=//p")" -ge 2 ]'
	kill -KILL "$sh"
	wait "$sh" || :
	until_ 100 sh -c '! kill -0 "$(cat bpid)" 2>/dev/null'
	[ "$(beat_field beat/p9 status)" = live ]
}

@test "watch: an --on-dead command past its deadline is stopped" {
	spirt-init -q -m m mlp:4-3
	spirt-beat -c 1 -t 0 beat p3
	spirt-beat -B 100 --on-dead-timeout 200 \
	    --on-dead 'echo started >>od.log; sleep 30; echo ended >>od.log' \
	    watch 2>watch.log &
	WATCHER=$!
	until_ 200 grep -q 'p3: --on-dead still running after 200 ms: stopped' \
	    watch.log
	until_ 50 grep -q 'p3: --on-dead killed by signal 15' watch.log
	[ "$(cat od.log)" = started ]
}

@test "beat: a peer's URL takes a member's own beat only; an unreachable one is said once" {
	spirt-peer keygen -p group.pub group.key >/dev/null
	for m in p1 p2; do
		spirt-peer keygen "$m.key" >"$m.hex"
		spirt-peer invite -o "$m.tok" -g group.key -i "$m" -r r1 \
		    "$(cat "$m.hex")"
	done
	spirt-init -q -m m mlp:4-3
	mkfifo ready
	timeout 120 spirt-peer serve -k p1.key -T p1.tok -g group.pub \
	    -l 127.0.0.1:0 -F 3 3>ready 2>srv.log &
	SRV=$!
	read -r -t 30 addr <ready
	export SPIRT_KEY=$PWD/p2.key SPIRT_TOKEN=$PWD/p2.tok SPIRT_GROUP=$PWD/group.pub
	# (no -s, no -m: to the url only)
	mkdir other
	( cd other && run -0 spirt-beat -B 50 -c 3 -t 4 beat p2 "http://$addr" )
	[ "$(beat_field beat/p2 step)" = 4 ]
	[ "$(beat_field beat/p2 seq)" = 2 ]
	# a forged beat for p1 (p2 is p2) is refused, and nothing changes
	spirt-store get beat/p2 >p2.rec
	run -65 spirt-store -s "http://$addr" put beat/p1 p2.rec
	run -66 spirt-store get beat/p1
	# beating to a peer that is not there: said once, the beats go on
	run -0 --separate-stderr env SPIRT_TIMEOUT=1s spirt-beat -B 50 -c 4 \
	    -t 4 beat p2 http://127.0.0.1:1
	[ "$(grep -c 'beat .* failed' <<<"$stderr")" -eq 1 ]
	kill -TERM "$SRV"
	wait "$SRV"
	SRV=
	grep -q '^spirt-peer: refused 127.0.0.1:[0-9]*: p2: put beat/p1 (peer): EROLE$' srv.log
}

@test "spirt-beat: usage errors are 64, a missing store 66" {
	run -64 spirt-beat -B 100 --suspect 50 ls
	assert_output --partial "budget: beat 100 ms, suspect 50 ms, dead 1000 ms"
	run -64 spirt-beat --on-dead 'echo %x' watch
	run -64 spirt-beat beat 'p/1'
	run -64 spirt-beat beat
	run -64 spirt-beat -m m -t 1 beat p1
	# another store on this host that is not there (yet): said, no error
	run -0 spirt-beat -c 2 beat p1 no-such-store
	assert_output --partial "no-such-store: beat 0 failed"
	run -64 spirt-beat -R boss beat p1
	run -64 spirt-beat --status dead beat p1
	run -64 spirt-beat --check 'a b'
	run -64 spirt-beat watch extra
	run -64 spirt-beat dance
	run -64 spirt-beat -B 0 ls
	run -64 env SPIRT_BEAT=x spirt-beat ls
	run -66 spirt-beat -s nowhere ls
	run -66 spirt-beat -s nowhere --check p1
	run -66 spirt-beat -s nowhere -c 1 beat p1
	run -66 spirt-beat -s nowhere -c 1 watch
	# a url's credentials
	unset SPIRT_KEY
	run -64 spirt-beat -c 1 beat p2 http://127.0.0.1:1
	assert_output --partial "SPIRT_KEY: not set"
	run -66 env SPIRT_KEY=nokey spirt-beat -c 1 beat p2 http://127.0.0.1:1
	echo junk >bad.key
	chmod 600 bad.key
	run -65 env SPIRT_KEY=bad.key spirt-beat -c 1 beat p2 http://127.0.0.1:1
}
