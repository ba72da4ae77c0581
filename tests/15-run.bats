#!/usr/bin/env bats
# 15-run: spirt-run, the supervisor of the warm tools: it starts children,
# relays requests and answers, times each request on the monotonic clock,
# and tells how each child ended

load helper

# feed SECONDS LINE...: the lines, then an open input for SECONDS more
feed() {
	local s=$1
	shift
	printf '%s\n' "$@"
	sleep "$s"
}

# script NAME BODY: an executable sh script NAME in the test's directory
script() {
	printf '#!/bin/sh\n%s\n' "$2" >"$1"
	chmod +x "$1"
}

@test "spirt-run: requests relayed to the named child, its answers back, in order" {
	run -0 --separate-stderr spirt-run -d 5000 < <(feed 1 \
	    'start up sed -u s/^/up:/' 'start low sed -u s/^/low:/' \
	    'send up a' 'send low b' 'post up c d' 'send low  two  blanks')
	[ -z "$stderr" ]
	[ "${#lines[@]}" -eq 4 ]
	# (each child's answers in order; the two children's interleave)
	[ "$(grep '^answer up ' <<<"$output")" = "answer up up:a
answer up up:c d" ]
	[ "$(grep '^answer low ' <<<"$output")" = "answer low low:b
answer low low: two  blanks" ]
}

@test "spirt-run: a child that ends is told, with its status or signal, after what it wrote" {
	script three 'read x; echo "bye $x"; exit 3'
	script nine 'read x; kill -9 $$'
	run -0 --separate-stderr spirt-run < <(feed 1 "start t $PWD/three" \
	    "start n $PWD/nine" 'send t 1' 'send n 2')
	[ "${#lines[@]}" -eq 3 ]
	assert_line --regexp '^died n pid=[0-9]+ signal=9$'
	# (its answer first, then its end)
	[ "$(grep ' t ' <<<"$output")" = "answer t bye 1
$(grep '^died t ' <<<"$output")" ]
	assert_line --regexp '^died t pid=[0-9]+ status=3$'
	# the pid is the child's: started again, a new one
	run -0 spirt-run < <(feed 1 "start t $PWD/three" 'send t 1' \
	    "start t $PWD/three" 'send t 2')
	[ "${#lines[@]}" -ge 2 ]
	assert_line 'answer t bye 1'
}

@test "spirt-run: a child past the deadline is killed and told late, once; the others go on" {
	script pidof 'echo $$ >"$1"; exec sleep 600'
	start=$(date +%s%N)
	run -0 --separate-stderr spirt-run -d 400 < <(feed 2 \
	    "start h $PWD/pidof $PWD/h.pid" 'start e sed -u s/^/e:/' \
	    'send h 1' 'send h 2' 'send e ok')
	ms=$((($(date +%s%N) - start) / 1000000))
	[ "${#lines[@]}" -eq 2 ]
	assert_line 'answer e e:ok'
	assert_line --regexp '^late h pid=[0-9]+ ms=400$'
	# the hung process is the one told, and it is gone (not a zombie)
	[ "${lines[*]}" != "${lines[*]#*pid=$(cat h.pid) }" ]
	! kill -0 "$(cat h.pid)" 2>/dev/null
	# (the 2 s of open input, not the sleep's 600)
	[ "$ms" -lt 20000 ]
}

@test "spirt-run: run: a one-shot command's end is told; past the deadline from its start it is killed, late" {
	script pidof 'echo $$ >"$1"; exec sleep 600'
	script slow 'sleep 0.2; echo done; exit 4'
	run -0 --separate-stderr spirt-run -d 700 < <(feed 2 \
	    "run h $PWD/pidof $PWD/h.pid" "run s $PWD/slow" 'run t true' \
	    'run t true' "start k $PWD/pidof $PWD/k.pid")
	# (the second t: refused, or run after the first ended)
	assert_line 'answer s done'
	assert_line --regexp '^died s pid=[0-9]+ status=4$'
	assert_line --regexp '^died t pid=[0-9]+ status=0$'
	assert_line --regexp '^late h pid=[0-9]+ ms=700$'
	! kill -0 "$(cat h.pid)" 2>/dev/null
	# (start: no deadline of its life; ended at the end of input)
	run -1 grep ' k ' <<<"$output"
	! kill -0 "$(cat k.pid)" 2>/dev/null
}

@test "spirt-run: a stopped child is late and killed too" {
	script stop 'echo $$ >"$1"; kill -STOP $$; cat'
	run -0 spirt-run -d 300 < <(feed 1.5 "start s $PWD/stop $PWD/s.pid" \
	    'send s x')
	assert_line --regexp '^late s pid=[0-9]+ ms=300$'
	! kill -0 "$(cat s.pid)" 2>/dev/null
}

@test "spirt-run: junk on its input is refused with a line (64), and it goes on" {
	long=$(printf 'x%.0s' $(seq 1 5000))
	script longout 'read x; printf "%05000d\\n" 0; echo short'
	run -0 --separate-stderr spirt-run < <(feed 1 'bogus request' '' \
	    'start bad/name cat' 'start c' 'start c cat' 'start c cat' \
	    "send c $long" 'send c after' 'send nobody x' "start d $PWD/none" \
	    'send .x y' "$long" "start l $PWD/longout" 'send l x')
	[ -z "$stderr" ]
	assert_line 'refused 64 bogus request: unknown request'
	assert_line 'refused 64 (empty): no request'
	assert_line --regexp "^refused 64 start bad/name cat: not a name"
	assert_line 'refused 64 start c: no command'
	assert_line 'refused 64 start c: running already'
	assert_line "refused 64 send c ${long:0:33}: longer than 4096 bytes"
	assert_line 'refused 69 send nobody: not running'
	assert_line "refused 69 start d: $PWD/none: No such file or directory"
	assert_line --regexp '^refused 64 send \.x y: not a name'
	assert_line "refused 64 ${long:0:40}: longer than 4096 bytes"
	assert_line 'answer c after'
	# a child's long line comes cut, and the next one whole
	assert_line "answer l $(printf '%04096d' 0)"
	assert_line 'answer l short'
	[ "${#lines[@]}" -eq 14 ]
	assert_line --regexp "^died l pid=[0-9]+ status=0$"
}

# fn: a warm function's answers; fn W STEP HOW [S]: at step STEP it
# after 0.3 s exits 3 (HOW die), says nothing (hang), answers error=65
# (err) or a line out of turn (odd); it sleeps S tenths before others
fns() {
	script fn 'while read -r t rest; do
	if [ "$t" = "$2" ]; then
		sleep 0.3
		case $3 in
		die) exit 3 ;;
		hang) sleep 60 ;;
		err) echo "step=$t worker=$1 error=65"; continue ;;
		odd) echo ok; continue ;;
		esac
	fi
	sleep "0.${4:-0}"
	echo "step=$t worker=$1${rest:+ $rest}"
done'
	# (the chained tool: what it was sent, in a file)
	script upd 'while read -r t rest; do echo "$t $rest" >>got
	case $rest in *bad*) echo "step=$t error=65" ;;
	*) echo "step=$t loss=0.5" ;; esac; done'
}

@test "spirt-run: fan: one line once every child answered well; then NAME TEXT sent after, its answer in that line" {
	fns
	run -0 --separate-stderr spirt-run -d 5000 < <(feed 1.5 \
	    "start g0 $PWD/fn 0 - - 2" "start g1 $PWD/fn 1" "start u $PWD/upd" \
	    'fan g0,g1 5 to=slot then u 5 mean=slots' 'start x true')
	[ -z "$stderr" ]
	assert_line 'stepped u step=5 loss=0.5'
	assert_line --regexp '^died x pid=[0-9]+ status=0$'
	[ "${#lines[@]}" -eq 2 ]
	[ "$(cat got)" = '5 mean=slots' ]
	# no then: fanned N; then's answer not well: fanned N, then it as
	# a send's (an error, another step's)
	run -0 --separate-stderr spirt-run -d 5000 < <(feed 1 \
	    "start g0 $PWD/fn 0" "start g1 $PWD/fn 1" "start u $PWD/upd" \
	    'fan g0,g1 6')
	[ "$output" = 'fanned 2' ]
	run -0 --separate-stderr spirt-run -d 5000 < <(feed 1 \
	    "start g0 $PWD/fn 0" "start g1 $PWD/fn 1" "start u $PWD/upd" \
	    'fan g0,g1 7 then u 7 bad')
	[ "$output" = 'fanned 2
answer u step=7 error=65' ]
}

@test "spirt-run: fan: a child that dies, is late, answers error= or out of turn: every answer told as sends would, the chained request never sent" {
	fns
	for how in die hang err odd; do
		rm -f got
		run -0 --separate-stderr spirt-run -d 1500 < <(feed 2.5 \
		    "start g0 $PWD/fn 0" "start g1 $PWD/fn 1 5 $how" \
		    "start g2 $PWD/fn 2 - - 9" "start u $PWD/upd" \
		    'fan g0,g1,g2 5 then u 5')
		[ ! -e got ] || fail "$how: the chained request was sent"
		[ "${#lines[@]}" -eq 3 ] || fail "$how: $output"
		# (the one answer held till then first, the slow one's after)
		[ "${lines[0]}" = 'answer g0 step=5 worker=0' ]
		[ "${lines[2]}" = 'answer g2 step=5 worker=2' ] ||
		    [ "$how" = hang ]
		case $how in
		die) [[ "${lines[1]}" =~ ^died\ g1\ pid=[0-9]+\ status=3$ ]] ;;
		hang) [[ "${lines[2]}" =~ ^late\ g1\ pid=[0-9]+\ ms=1500$ ]] ;;
		err) [ "${lines[1]}" = 'answer g1 step=5 worker=1 error=65' ] ;;
		odd) [ "${lines[1]}" = 'answer g1 ok' ] ;;
		esac || fail "$how: $output"
	done
	# one killed (kill NAME): its request dropped, the fan with it
	run -0 --separate-stderr spirt-run -d 5000 < <(feed 1.5 \
	    "start g0 $PWD/fn 0" "start g1 $PWD/fn 1 5 hang" \
	    "start g2 $PWD/fn 2" "start u $PWD/upd" \
	    'fan g0,g1,g2 5 then u 5' 'kill g1')
	[ "$output" = 'answer g0 step=5 worker=0
answer g2 step=5 worker=2' ] || [ "$output" = 'answer g2 step=5 worker=2
answer g0 step=5 worker=0' ]
	[ ! -e got ]
	# a child of the fan not running: its refusal, the others' answers
	run -0 --separate-stderr spirt-run -d 5000 < <(feed 1 \
	    "start g0 $PWD/fn 0" "start u $PWD/upd" 'fan g0,g9 3 then u 3')
	assert_line 'refused 69 send g9: not running'
	assert_line 'answer g0 step=3 worker=0'
	[ "${#lines[@]}" -eq 2 ]
	[ ! -e got ]
}

@test "spirt-run: fan: a malformed one is refused (64), nothing sent" {
	fns
	run -0 --separate-stderr spirt-run -d 5000 < <(feed 1 \
	    "start g0 $PWD/fn 0" "start u $PWD/upd" 'fan' 'fan g0' \
	    'fan g0,,u 1' 'fan g0,g0 1' 'fan g0 1 then' 'fan g0 1 then u' \
	    'fan g0 1 then g0 1' 'fan g0 then u 1' "fan $(seq -s, -f g%g 257) 1" \
	    'fan g0 2 then u 2' 'fan g0 3')
	assert_line 'refused 64 fan: not a name (1-32 letters, digits, '"'.', '_', '-')"
	assert_line 'refused 64 fan g0: no text'
	assert_line --regexp '^refused 64 fan g0,,u 1: not a name'
	assert_line 'refused 64 fan g0,g0 1: g0 twice'
	assert_line 'refused 64 fan g0 1 then: then: not a name'
	assert_line 'refused 64 fan g0 1 then u: then: no text'
	assert_line 'refused 64 fan g0 1 then g0 1: g0 twice'
	assert_line 'refused 64 fan g0 then u 1: no text'
	assert_line --regexp '^refused 64 fan g1,g2,.*: more than 256 names$'
	# one fan at a time
	assert_line 'refused 64 fan g0 3: a fan under way'
	assert_line 'stepped u step=2 loss=0.5'
	[ "${#lines[@]}" -eq 11 ]
	[ "$(cat got)" = '2 ' ]
}

@test "spirt-run: many requests, no answer lost" {
	n=2000
	run -0 --separate-stderr spirt-run -d 60000 < <(
		printf '%s\n' 'start a sed -u s/^/a:/' 'start b cat'
		i=0
		while [ $i -lt $n ]; do
			echo "send a $i"
			echo "post b $i"
			i=$((i + 1))
		done
		sleep 2)
	[ "$(grep -c '^answer a a:' <<<"$output")" -eq "$n" ]
	[ "$(grep -c '^answer b ' <<<"$output")" -eq "$n" ]
	# each once, in order
	[ "$(sed -n 's/^answer b //p' <<<"$output")" = "$(seq 0 $((n - 1)))" ]
	[ "$(sed -n 's/^answer a a://p' <<<"$output")" = "$(seq 0 $((n - 1)))" ]
}

@test "spirt-run: its driver killed outright: every child is gone within a bound" {
	script pidof 'echo $$ >"$1"; exec sleep 600'
	# (a child that ignores SIGTERM: SIGKILL after the grace)
	script deaf 'trap "" TERM; echo $$ >"$1"; while :; do sleep 1; done'
	script driver '
mkfifo rq an
exec 3<>rq 4<>an
SPIRT_PARENT=$$ spirt-run <rq >an 3>&- 4<&- &
echo $! >run.pid
echo "start a $PWD/pidof $PWD/a.pid" >&3
echo "start b $PWD/deaf $PWD/b.pid" >&3
exec sleep 600'
	./driver &
	drv=$!
	until_ 100 test -s a.pid
	until_ 100 test -s b.pid
	kill -0 "$(cat a.pid)"
	kill -KILL "$drv"
	t0=$(date +%s%N)
	until_ 100 eval '! kill -0 $(cat run.pid) 2>/dev/null'
	! kill -0 "$(cat a.pid)" 2>/dev/null
	until_ 50 eval '! kill -0 $(cat b.pid) 2>/dev/null'
	# (1 s of grace for the deaf one, then SIGKILL)
	[ $((($(date +%s%N) - t0) / 1000000)) -lt 8000 ]
	pkill -P "$(cat b.pid)" sleep 2>/dev/null || :
}

@test "spirt-run: guard NAME: its end told, then SIGUSR1 to its parent; stop NAME: SIGTERM, its end told, unguarded; kill NAME: ended at once, its end not told" {
	script four 'sleep 0.5; exit 4'
	script pidof 'echo $$ >"$1"; exec sleep 600'
	# (its parent a shell that counts the SIGUSR1s it gets)
	script driver '
trap "echo usr1 >>got" USR1
{ printf "%s\n" "start f $PWD/four" "guard f" "start q $PWD/four" \
    "start p $PWD/pidof $PWD/p.pid" "guard nobody" "kill q x" \
    "start s $PWD/pidof $PWD/s.pid" "guard s"
sleep 0.3; printf "%s\n" "kill p" "kill p" "stop s"; sleep 1.5; } |
    spirt-run >out &
s=0
wait $! || s=$?
# (a wait a trapped signal cut short: again)
while [ "$s" -gt 128 ]; do s=0; wait $! || s=$?; done
exit "$s"'
	run -0 ./driver
	# one guarded end, one SIGUSR1, after its line
	[ "$(cat got)" = usr1 ]
	run -0 cat out
	assert_line --regexp '^died f pid=[0-9]+ status=4$'
	assert_line --regexp '^died q pid=[0-9]+ status=4$'
	assert_line 'refused 69 guard nobody: not running'
	assert_line 'refused 64 kill q x: a word after the name'
	assert_line 'refused 69 kill p: not running'
	# the killed one gone at once, its end not told
	run -1 grep '^died p ' out
	! kill -0 "$(cat p.pid)" 2>/dev/null
	# the stopped one's end told, no SIGUSR1 for it
	grep -Eqx "died s pid=$(cat s.pid) signal=15" out
	[ "$(wc -l <out)" -eq 6 ]
}

@test "spirt-run -D DIR: DIR and what it holds removed as it ends, its driver killed outright too" {
	mkdir -p d/sub
	touch d/a d/sub/b keep
	ln -s "$PWD/keep" d/link
	run -0 spirt-run -D d </dev/null
	[ ! -e d ]
	# (a link's target stays)
	[ -e keep ]
	run -64 spirt-run -c -D d
	mkdir e
	touch e/x
	script driver '
mkfifo rq
exec 3<>rq
SPIRT_PARENT=$$ spirt-run -D "$PWD/e" <rq 3>&- &
echo $! >run.pid
exec sleep 600'
	./driver &
	drv=$!
	until_ 100 test -s run.pid
	kill -KILL "$drv"
	until_ 100 eval '! kill -0 $(cat run.pid) 2>/dev/null'
	[ ! -e e ]
}

@test "spirt-run: killed outright itself, its children get SIGTERM" {
	script pidof 'echo $$ >"$1"; exec sleep 600'
	mkfifo in
	spirt-run <in &
	sup=$!
	exec 5>in
	echo "start a $PWD/pidof $PWD/a.pid" >&5
	until_ 100 test -s a.pid
	kill -KILL "$sup"
	exec 5>&-
	until_ 50 eval '! kill -0 $(cat a.pid) 2>/dev/null'
}

@test "spirt-run: exit codes: 0 at the end of input, 64, 74, 75" {
	script pidof 'echo $$ >"$1"; exec sleep 600'
	# 0: the end of its input ends its children too
	run -0 --separate-stderr spirt-run < <(echo "start a $PWD/pidof $PWD/a.pid"; sleep 0.5)
	[ -z "$output" ]
	! kill -0 "$(cat a.pid)" 2>/dev/null
	run -64 --separate-stderr spirt-run -d 0
	[[ "$stderr" == *"spirt-run: -d"* ]]
	run -64 --separate-stderr spirt-run extra
	# 74: its answers cannot be written
	s=0
	spirt-run < <(printf '%s\n' 'start c cat' 'send c x'; sleep 1) \
	    >/dev/full 2>err || s=$?
	[ "$s" -eq 74 ]
	[ "$(cat err)" = "spirt-run: write stdout: No space left on device" ]
	# 74 too when its reader is gone (the driver killed), quietly
	run -0 "$PYTHON" -c '
import os, subprocess, time
r, w = os.pipe()
os.close(r)
p = subprocess.Popen(["spirt-run"], stdin=subprocess.PIPE, stdout=w,
    stderr=subprocess.PIPE)
p.stdin.write(b"start c cat\nsend c x\n")
p.stdin.flush()
time.sleep(1)
p.stdin.close()
print(p.wait(), len(p.stderr.read()))'
	[ "$output" = "74 0" ]
	# 75: SIGTERM, its children ended first
	rm -f a.pid
	mkfifo in
	spirt-run <in >out 2>err &
	sup=$!
	exec 5>in
	echo "start a $PWD/pidof $PWD/a.pid" >&5
	until_ 100 test -s a.pid
	kill -TERM "$sup"
	s=0
	wait "$sup" || s=$?
	exec 5>&-
	[ "$s" -eq 75 ]
	! kill -0 "$(cat a.pid)" 2>/dev/null
	# 75: SPIRT_PARENT names a process that is not its parent
	SPIRT_PARENT=$$ run -75 --separate-stderr spirt-run </dev/null
	[[ "$stderr" == *"SPIRT_PARENT $$: that process, which started this one, is gone"* ]]
}

@test "spirt-run -c, -w, -u: the monotonic clock, and waits within a budget's end" {
	# -c: CLOCK_MONOTONIC in ms (python's monotonic is the same clock)
	run -0 --separate-stderr spirt-run -c
	[[ "$output" =~ ^[0-9]+$ ]]
	m=$("$PYTHON" -c 'import time; print(int(time.monotonic() * 1000))')
	[ $((m - output)) -ge 0 ] && [ $((m - output)) -lt 5000 ]
	# -w: the wait, measured on that clock
	a=$(spirt-run -c)
	run -0 spirt-run -w 300
	b=$(spirt-run -c)
	[ $((b - a)) -ge 300 ] && [ $((b - a)) -lt 3000 ]
	# -u: no longer than the budget's end, then 75 (late) ...
	a=$(spirt-run -c)
	run -75 spirt-run -w 60000 -u $((a + 300))
	b=$(spirt-run -c)
	[ $((b - a)) -ge 300 ] && [ $((b - a)) -lt 3000 ]
	# ... at once when it is past; a wait that ends before it is 0
	run -75 spirt-run -w 60000 -u 1
	run -0 spirt-run -w 10 -u $((b + 60000))
	# a budget's end outside a wait, several forms, no form: 64
	for a in "-u 5" "-c -w 1" "-r" "-d 5 -w 1" "-w x" "-w 86400001" "-u 0 -w 1"; do
		# shellcheck disable=SC2086
		run -64 --separate-stderr spirt-run $a
		[[ "$stderr" == *"usage: spirt-run"* ]] || [[ "$stderr" == "spirt-run: -"* ]] ||
			fail "$a: $stderr"
	done
}

@test "spirt-run -r -u: one line of its input within a budget, the rest left unread" {
	end=$(($(spirt-run -c) + 20000))
	run -0 --separate-stderr spirt-run -r -u "$end" < <(printf 'a b\nc\n')
	[ "$output" = "a b" ]
	# one byte a read: the next line is the next reader's
	printf 'one\ntwo\n' >two
	{ spirt-run -r -u "$end" && spirt-run -r -u "$end" && cat; } <two >got
	printf 'one\ntwo\n' | cmp - got
	# a last line without a newline is a line; none at all is 66
	run -0 spirt-run -r -u "$end" < <(printf 'last')
	[ "$output" = last ]
	run -66 spirt-run -r -u "$end" </dev/null
	[ -z "$output" ]
	# a writer that says nothing: 75 at the end of the budget, not before
	mkfifo f
	sleep 30 >f &
	w=$!
	a=$(spirt-run -c)
	run -75 spirt-run -r -u $((a + 400)) <f
	b=$(spirt-run -c)
	kill "$w"
	[ -z "$output" ]
	[ $((b - a)) -ge 400 ] && [ $((b - a)) -lt 5000 ]
	# a line longer than 4096 bytes: 65
	run -65 --separate-stderr spirt-run -r -u "$end" < <(head -c 5000 /dev/zero | tr '\0' x)
	[[ "$stderr" == "spirt-run: stdin: a line longer than 4096 bytes" ]]
}

@test "spirt-run: SPIRT_RUN_LOG: each request line appended to the file as it came, refused ones too; a file it cannot open is 73" {
	printf 'before\n' >trace
	SPIRT_RUN_LOG=$PWD/trace run -0 --separate-stderr spirt-run -d 5000 \
	    < <(feed 0.5 'start up sed -u s/^/up:/' 'send up  two  blanks' \
	    'bogus x' 'guard up')
	[ -z "$stderr" ]
	assert_line 'answer up up: two  blanks'
	assert_line 'refused 64 bogus x: unknown request'
	[ "$(cat trace)" = 'before
start up sed -u s/^/up:/
send up  two  blanks
bogus x
guard up' ]
	# (empty: no trace)
	SPIRT_RUN_LOG= run -0 spirt-run </dev/null
	SPIRT_RUN_LOG=$PWD/no/such run -73 --separate-stderr spirt-run \
	    </dev/null
	[ "$stderr" = "spirt-run: SPIRT_RUN_LOG: $PWD/no/such: No such file or directory" ]
}
