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

@test "every tool's man page lints clean" {
	run mandoc -Tlint -W warning "$SPIRT_ROOT"/man/*.[157]
	assert_success
	assert_output ''
}
