#!/usr/bin/env bats
# 00-usage: every tool with a man page answers -h, -V and bad flags the same
# way, and its usage text is its man page's SYNOPSIS.

load helper

tools() {
	for m in "$SPIRT_ROOT"/man/*.1; do
		basename "$m" .1
	done
}

# collapse whitespace so line wrapping does not matter
squash() {
	tr -s ' \t\n' '   ' | sed 's/^ //; s/ $//'
}

@test "every tool with a man page is built" {
	for t in $(tools); do
		[ -x "$SPIRT_ROOT/$t" ] || fail "$t: not built"
	done
}

@test "-h prints usage on stdout and exits 0" {
	for t in $(tools); do
		run --separate-stderr "$t" -h
		[ "$status" -eq 0 ] || fail "$t -h: exit $status"
		[[ "$output" == "usage: $t"* ]] || fail "$t -h: $output"
		[ -z "$stderr" ] || fail "$t -h wrote to stderr: $stderr"
	done
}

@test "--help is -h" {
	for t in $(tools); do
		run -0 "$t" --help
		[[ "$output" == "usage: $t"* ]] || fail "$t --help"
	done
}

@test "-V prints name and version" {
	for t in $(tools); do
		run --separate-stderr "$t" -V
		[ "$status" -eq 0 ] || fail "$t -V: exit $status"
		[[ "${lines[0]}" =~ ^$t\ [0-9]+\.[0-9]+\.[0-9]+ ]] ||
			fail "$t -V: $output"
	done
}

@test "a bad flag exits 64 with usage on stderr only" {
	for t in $(tools); do
		run --separate-stderr "$t" --no-such-flag
		[ "$status" -eq 64 ] || fail "$t: exit $status"
		[[ "$stderr" == *"usage: $t"* ]] || fail "$t: $stderr"
		[ -z "$output" ] || fail "$t wrote to stdout: $output"
	done
}

@test "usage text matches the man page SYNOPSIS" {
	# mandoc -Tascii marks bold and underline by overstriking (c BS c,
	# _ BS c): drop each character followed by a backspace (no col(1))
	bs=$(printf '\b')
	for t in $(tools); do
		page=$(mandoc -Tascii "$SPIRT_ROOT/man/$t.1") ||
			fail "$t: mandoc -Tascii man/$t.1 failed"
		want=$(printf '%s\n' "$page" | sed "s/.$bs//g" |
			sed -n '/^SYNOPSIS/,/^DESCRIPTION/p' |
			sed '1d;$d' | squash)
		[ -n "$want" ] ||
			fail "$t: no SYNOPSIS section found in man/$t.1"
		use=$("$t" -h) || fail "$t -h: exit $?"
		got=$(printf '%s\n' "$use" | sed -n '1,/^$/p' |
			sed 's/^usage: //' | squash)
		[ "$got" = "$want" ] ||
			fail "$t: usage \"$got\" but SYNOPSIS \"$want\""
	done
}

@test "every option -h lists is in the usage, so in the SYNOPSIS" {
	# a tool's option table drives its -h lines (cmd/opt.h); the usage,
	# which the test above holds to the man page, must name each option
	for t in $(tools); do
		use=$("$t" -h) || fail "$t -h: exit $?"
		syn=$(printf '%s\n' "$use" | sed -n '1,/^$/p')
		for o in $(printf '%s\n' "$use" | sed -n '/^$/,$p' | sed -n \
		    's/^  \(-\([A-Za-z]\), \)\{0,1\} *\(--\([a-z0-9-]*\)\)\{0,1\}.*/\2:\4/p'); do
			s=${o%%:*} l=${o#*:}
			case $s in h|V) continue ;; esac
			[ -n "$s$l" ] || continue
			[ -n "$s" ] && printf '%s' "$syn" |
			    grep -qE -- "-[A-Za-z]*$s[A-Za-z]*([] ]|\$)" && continue
			[ -n "$l" ] && printf '%s' "$syn" |
			    grep -qE -- "--$l([] ]|\$)" && continue
			fail "$t: -h lists ${s:+-$s}${s:+${l:+, }}${l:+--$l}, its usage does not"
		done
	done
}

@test "every tool's man page lints clean" {
	run mandoc -Tlint -W warning "$SPIRT_ROOT"/man/*.[157]
	assert_success
	assert_output ''
}

@test "SPIRT_PARENT: not a number is 64, a parent already gone is 75, and a tool ends when its parent is killed" {
	sleep 60 &
	other=$!
	for c in "$SPIRT_ROOT"/cmd/spirt-*.c; do
		t=$(basename "$c" .c)
		run --separate-stderr env SPIRT_PARENT=x "$t" -V
		[ "$status" -eq 64 ] || fail "$t: exit $status"
		[[ "$stderr" == *"SPIRT_PARENT x: not a process id"* ]] || fail "$t: $stderr"
		run --separate-stderr env SPIRT_PARENT=$other "$t" -V
		[ "$status" -eq 75 ] || fail "$t: exit $status"
		[[ "$stderr" == *"SPIRT_PARENT $other: that process, which started this one, is gone"* ]] ||
			fail "$t: $stderr"
	done
	kill $other
	# its own parent: the tool runs
	run -0 sh -c 'SPIRT_PARENT=$$ spirt-init -q -s s -m m mlp:4-2 && echo ok'
	[ "$output" = ok ]
	run -0 spirt-store -s s ls model/m@
	# a watcher that runs for ever, its parent then SIGKILLed: it ends
	sh -c 'SPIRT_PARENT=$$ spirt-beat -q -s s watch & echo $! >wpid; wait' &
	sh=$!
	until [ -s wpid ]; do sleep 0.1; done
	w=$(cat wpid)
	sleep 0.5
	kill -0 "$w"
	kill -KILL "$sh"
	wait "$sh" || :
	i=0
	while kill -0 "$w" 2>/dev/null; do
		i=$((i + 1))
		[ "$i" -lt 100 ] || { kill "$w"; fail "spirt-beat watch outlived its parent"; }
		sleep 0.1
	done
}
