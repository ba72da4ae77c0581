#!/usr/bin/env bats
# 96-manpage-examples: the EXAMPLES of spirt-peer(1) run as typed.
#
# The commands are taken from the page's literal displays (man_blocks,
# tests/blocks.bash: "$ " lines and the indented lines that continue them;
# the other lines are what they print), so the page and this test cannot
# drift apart.  They run as README.md's blocks do (tests/96-readme.bats):
# every display in order, in one bash, with set -e and pipefail, with the
# tools on PATH as the page says and no SPIRT_* or OPENBLAS_* variables,
# within a time limit; the servers they start listen on loopback only, and
# whatever a failing run leaves behind (its process group) is killed in
# teardown.  The last tests run the extractor on small pages of their own.

load helper
load blocks

teardown() {
	kill_blocks "$BATS_TEST_TMPDIR/b"
}

# run_page PAGE: extract PAGE's displays into b/ and run them (300 s at
# most), with the tree's tools first on PATH; a server must listen on
# loopback (-l 127.0.0.1:port), or nothing runs
run_page() {
	local n
	mkdir -p b
	basename "$1" > b/what
	n=$(man_blocks "$1" b)
	echo "$n" > b/n
	if grep -hoE -- '(-l|--listen)[ =][^ ]*' b/*.sh |
	    grep -vE -- '[ =]127\.0\.0\.1:[0-9]+$'; then
		echo "$1: a server not on loopback"
		return 1
	fi
	BLOCKS_PATH="$SPIRT_ROOT:$BASEPATH" run_blocks "$PWD/b" "$n" \
	    "$PWD" 300
}

@test "spirt-peer(1) EXAMPLES: three peers and a function, one step, as typed" {
	fmnist_or_skip
	[ "$FMNIST" = /usr/share/datasets/fashion-mnist ] ||
		skip "the page reads Fashion-MNIST from its Debian package"
	run_page "$SPIRT_ROOT/man/spirt-peer.1"
	n=$(cat b/n)
	[ "$n" -ge 6 ]
	# each shell block parses with POSIX sh too
	for ((i = 1; i <= n; i++)); do
		sh -n "b/$i.sh"
	done
	# what was run is what the page shows: every command line, as
	# mandoc renders it
	mandoc -Tascii "$SPIRT_ROOT/man/spirt-peer.1" | sed 's/.\x08//g' |
	    sed 's/^[ \t]*//; s/[ \t]*$//' > rendered
	cat b/*.shown | sed 's/^[ \t]*//; s/[ \t]*$//' | while IFS= read -r l
	do
		grep -qxF -- "$l" rendered || { echo "not shown: $l"; exit 1; }
	done
	cat b/*.out > all.out

	# the servers are stopped: nothing of the run is left
	! group_live "$(cat b/pgid)"
	[ "$(grep -c '^spirt-peer: stopped: [0-9]* served, 0 refused$' \
	    all.out)" -eq 3 ]
	# three peers served on loopback, and the function computed p1's
	# gradients through p1's server
	w=$(echo b/tmp/tmp.*)
	[ -d "$w" ]
	run -0 cat "$w/peers"
	[ "${#lines[@]}" -eq 3 ]
	for i in 0 1 2; do
		assert_line --index $i \
		    --regexp "^p$((i + 1)) http://p$((i + 1))@127\.0\.0\.1:[0-9]+\$"
	done
	run -0 spirt-store -s "$w/p1.db" ls grad/0/
	assert_line --regexp '^grad/0/0	'
	assert_line --regexp '^grad/0/1	'
	[ "${#lines[@]}" -eq 2 ]
	# every peer combined all three aggregates and applied them: the
	# three models at step 1 are the same bytes, and cksum said so
	for p in p1 p2 p3; do
		spirt-store -s "$w/$p.db" get gagg/0/round > "$p.round"
		[ "$(grep -acE '^peer=p[123] (self|used)$' "$p.round")" -eq 3 ]
		spirt-store -s "$w/$p.db" get model/mlp@1 > "$p.model"
	done
	cmp p1.model p2.model
	cmp p1.model p3.model
	! cmp -s p1.model <(spirt-store -s "$w/p1.db" get model/mlp@0)
	[ "$(grep -cx "$(cksum < p1.model)" all.out)" -eq 3 ]
}

@test "man EXAMPLES check: commands, continuations, output and escapes" {
	cat > x.1 <<-'EOF'
	.Sh DESCRIPTION
	.Bd -literal
	$ echo not an example
	.Ed
	.Sh EXAMPLES
	Text.
	.Bd -literal -offset indent
	$ for w in a b; do
	      printf '%s\en' "$w" \e
	          >>x
	  done
	printed, not run
	    indented, after output: not run
	$ echo \-n \&ok
	.Ed
	.Bd -literal
	a file, not run
	.Ed
	.Bd -literal
	$ cat x
	.Ed
	.Sh SEE ALSO
	.Bd -literal
	$ echo not an example
	.Ed
	EOF
	mkdir b
	run -0 man_blocks x.1 b
	assert_output 2
	[ "$(cat b/1.line)" -eq 8 ] && [ "$(cat b/2.line)" -eq 20 ]
	printf '%s\n' 'for w in a b; do' "      printf '%s\\n' \"\$w\" \\" \
	    '          >>x' '  done' 'echo -n ok' > want
	diff want b/1.sh
	sed -n 1p b/1.shown | grep -qxF '$ for w in a b; do'
	run -0 run_blocks "$PWD/b" 2 "$PWD"
	assert_equal "$(cat b/2.out)" "$(printf 'a\nb')"
	assert_equal "$(cat b/1.out)" ok
}

@test "man EXAMPLES check: a failing command fails, naming the page and line" {
	printf '.Sh EXAMPLES\n.Bd -literal\n$ true\n$ false\n$ touch never\n.Ed\n' \
	    > x.1
	mkdir b
	echo x.1 > b/what
	run -0 man_blocks x.1 b
	run -1 run_blocks "$PWD/b" 1 "$PWD"
	assert_line --index 0 --partial 'x.1 block 1 of 1 (line 3) failed'
	[ ! -e never ]
}

@test "man EXAMPLES check: a server a failed run leaves behind is killed" {
	printf '.Sh EXAMPLES\n.Bd -literal\n$ sleep 300 &\n$ echo $! >pid\n$ false\n.Ed\n' \
	    > x.1
	mkdir b
	run -0 man_blocks x.1 b
	run -1 run_blocks "$PWD/b" 1 "$PWD"
	pid=$(cat pid)
	[[ "$(ps -o stat= -p "$pid")" != Z* ]]
	kill_blocks b
	! group_live "$(cat b/pgid)"
	run ps -o stat= -p "$pid"
	[[ "$output" == Z* ]] || [ -z "$output" ]
}

@test "man EXAMPLES check: other escapes, requests, no EXAMPLES, open display" {
	mkdir b
	printf '.Sh EXAMPLES\n.Bd -literal\n$ echo \\(aq\n.Ed\n' > x.1
	run -1 man_blocks x.1 b
	assert_output --partial 'x.1:3: escape \('
	printf '.Sh EXAMPLES\n.Bd -literal\n$ true\n.Pp\n.Ed\n' > x.1
	run -1 man_blocks x.1 b
	assert_output --partial 'x.1:4: a request in a literal display'
	printf '.Sh DESCRIPTION\n.Bd -literal\n$ true\n.Ed\n' > x.1
	run -1 man_blocks x.1 b
	assert_output --partial 'x.1: no EXAMPLES'
	printf '.Sh EXAMPLES\n.Bd -literal\n$ true\n' > x.1
	run -1 man_blocks x.1 b
	assert_output --partial 'x.1:2: display not closed'
}
