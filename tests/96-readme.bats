#!/usr/bin/env bats
# 96-readme: every shell block of README.md runs as typed.
#
# The blocks are taken from README.md itself, so the README and this test
# cannot drift apart.  README.md fences each block with its kind:
#   ```sh             run here: every such block, in order, in one bash
#                     (as a user types them into one shell), from a copy of
#                     the tree with the tools built, as a clone is after the
#                     set-up; the shell starts with a PATH that does not hold
#                     the tools and with no SPIRT_* or OPENBLAS_* variables
#   ```sh fresh-root  the set-up, `sh ./bootstrap demo` and `sh ./bootstrap
#                     check`: not run here (the demo takes minutes, and check
#                     would run this file again).  CI's fresh-root run
#                     (.ci/run) runs those commands as written, as root, on a
#                     new minimal Debian 12.
#   ```text           not shell (the layout)
# Any other fence, or an indented code block, is an error, so a new command
# cannot slip into the README without being run.  The last tests run the
# extractor and the runner on small READMEs of their own, to show that a
# failing command, a failing pipeline or a stray fence fails.

load helper
load blocks

teardown() {
	kill_blocks "$BATS_TEST_TMPDIR/b"
}

@test "README.md: every shell block runs as typed, in order, in a new tree" {
	fmnist_or_skip
	[ "$FMNIST" = /usr/share/datasets/fashion-mnist ] ||
		skip "the README reads Fashion-MNIST from its Debian package"
	# the shell starts without the tools: the README must put them on PATH
	run ! env PATH="$BASEPATH" sh -c 'command -v spirt-store'
	copy_tree tree
	find tree -type f | sort > before
	mkdir b
	n=$(readme_blocks "$SPIRT_ROOT/README.md" b)
	[ "$n" -ge 4 ]
	# POSIX sh too, not only bash: each block parses with sh (dash)
	for ((i = 1; i <= n; i++)); do
		sh -n "b/$i.sh"
	done
	run_blocks "$PWD/b" "$n" "$PWD/tree"
	cat b/*.out > all.out

	# a dead function's samples reassigned: its heirs' gradients count
	# whole, with no note of a count cut to the batch
	run ! grep 'samples claimed' all.out
	# help: the usage and the man page, from the tree
	grep -q '^usage: spirt-grad ' all.out
	sed 's/.\x08//g' all.out | grep -q '^SYNOPSIS'
	# the blocks made their files in a scratch directory, not in the tree
	find tree -type f | sort > after
	diff before after
	w=$(echo b/tmp/tmp.*)
	[ -d "$w" ]

	# by hand: the store holds the data, the step's gradients and aggregate,
	# and model/mlp@1 (with Adam's state) beside model/mlp@0
	run -0 spirt-store -s "$w/spirt.db" ls
	assert_line --regexp '^data/train/3/x.u8.15000x1x28x28.'
	assert_line --regexp '^data/test/0/x.u8.10000x1x28x28.'
	for k in grad/0/0 grad/0/1 grad/0/2 grad/0/3 agg/0 model/mlp@0 \
	    model/mlp@1 opt/mlp@1; do
		assert_line --regexp "^$k	"
	done
	refute_line --regexp '^model/mlp@2'
	# spirt-eval printed the newest version's figures, and the step by hand
	# lowered the test loss
	grep -qx 'step=1' all.out
	grep -qx 'samples=10000' all.out
	l0=$(spirt-eval -s "$w/spirt.db" -m mlp -t 0 | sed -n 's/^loss=//p')
	l1=$(spirt-eval -s "$w/spirt.db" -m mlp -t 1 | sed -n 's/^loss=//p')
	awk -v a="$l0" -v b="$l1" 'BEGIN { exit !(b < a) }'

	# your own data: the NumPy arrays are the data sets mine (two shards)
	# and mine-test, and the softmax trained on them, by name, learnt
	# (its 32nd step, 4 epochs of 8, the last line of its log)
	run -0 spirt-store -s "$w/mine.db" ls data/
	assert_line --regexp '^data/mine/1/x	f32	'
	assert_line --regexp '^data/mine-test/0/y	'
	refute_line --regexp '^data/train/'
	awk -F'\t' '$2 == 32 && $3 == "4.000" && $6 > 0.8 { ok = 1 }
		END { exit !ok }' all.out

	# as filters: model.spt is step 1 of the MLP followed by Adam's state,
	# and no store was touched
	run -0 spirt-store inspect "$w/model.spt"
	assert_line 'record=1'
	[ "$(grep -c '^record=' <<<"$output")" -eq 2 ]
	[ "$(sed -n 's/^name=//p' <<<"$output" | tr '\n' ' ')" = \
	  'mlp:784-256-128-10 adam ' ]
	[ "$(sed -n 's/^step=//p' <<<"$output" | tr '\n' ' ')" = '1 1 ' ]
	grep -q '^checksum=ok' <<<"$output"
	[ -s "$w/train.spt" ]
}

@test "README.md: make install puts every tool and page it names under PREFIX" {
	# as the README says: the tools in /usr/local/bin, the pages in
	# /usr/local/share/man (here under a DESTDIR)
	run -0 make -s -C "$SPIRT_ROOT" install DESTDIR="$PWD/root"
	bin=root/usr/local/bin man=root/usr/local/share/man
	# the README's table lists exactly the installed tools, each runs
	sed -n 's/^| `\(spirt-[a-z]*\)` |.*/\1/p' "$SPIRT_ROOT/README.md" |
	    sort > table
	[ "$(wc -l < table)" -ge 8 ]
	(cd "$bin" && ls) | sort > installed
	diff table installed
	while read -r t; do
		run -0 "$bin/$t" -V
		assert_line --index 0 --regexp "^$t [0-9]"
		[ -f "$SPIRT_ROOT/man/$t.1" ] && [ -f "$man/man1/$t.1" ]
	done < table
	# every page the README names is in man/ and is installed
	grep -o 'man/spirt[-a-z]*\.[157]' "$SPIRT_ROOT/README.md" > pages
	grep -o 'spirt[-a-z]*([157])' "$SPIRT_ROOT/README.md" |
	    sed 's/^\(.*\)(\(.\))$/man\/\1.\2/' >> pages
	[ "$(sort -u pages | wc -l)" -ge 5 ]
	sort -u pages | while read -r p; do
		[ -f "$SPIRT_ROOT/$p" ] || { echo "README names $p"; exit 1; }
		s=${p##*.}
		[ -f "$man/man$s/${p#man/}" ] ||
		    { echo "$p not installed"; exit 1; }
	done
	# man finds them there, when man-db is installed
	if command -v man >/dev/null; then
		run -0 env MANPAGER=cat man -M "$man" spirt-grad
		assert_output --partial 'SYNOPSIS'
	fi
}

@test "README check: a failing command inside a block fails, naming the block" {
	cat > r.md <<-'EOF'
	# t
	```sh
	echo one > one.txt
	```
	```sh fresh-root
	exit 3
	```
	```text
	not shell
	```
	```sh
	true
	false
	echo never > never.txt
	```
	EOF
	mkdir -p b tree
	run -0 readme_blocks r.md b
	assert_output 2
	run -1 run_blocks "$PWD/b" 2 "$PWD/tree"
	assert_line --index 0 \
	    --partial 'README block 2 of 2 (line 12) failed (exit 1'
	assert_line '    false'
	[ -f tree/one.txt ] && [ ! -e tree/never.txt ]
}

@test "README check: a pipeline whose first command fails fails" {
	printf '```sh\nfalse | cat\n```\n' > r.md
	mkdir -p b tree
	run -0 readme_blocks r.md b
	run -1 run_blocks "$PWD/b" 1 "$PWD/tree"
	assert_line --index 0 --partial 'README block 1 of 1 (line 2) failed'
}

@test "README check: the blocks start without the tools on PATH" {
	printf '```sh\nspirt-store -V\n```\n' > r.md
	mkdir -p b tree
	run -0 readme_blocks r.md b
	run -1 run_blocks "$PWD/b" 1 "$PWD/tree"
	assert_output --partial 'spirt-store: command not found'
}

@test "README check: a stray fence, indented block or open fence is refused" {
	printf '# t\n```bash\nls\n```\n' > r.md
	run -1 readme_blocks r.md b
	assert_output --partial 'r.md:2: fence "```bash"'
	printf '# t\n\n    ls\n' > r.md
	run -1 readme_blocks r.md b
	assert_output --partial 'r.md:3: indented code block'
	printf '# t\n```sh\nls\n' > r.md
	mkdir b
	run -1 readme_blocks r.md b
	assert_output --partial 'r.md:2: fence not closed'
}
