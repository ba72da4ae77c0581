#!/usr/bin/env bats
# 61-install: what make install puts under a DESTDIR works from there, on
# its own: the tools (a whole training step with no build tree in PATH),
# man on every installed page, bash completion for every tool and its
# options (checked against each tool's usage and -h), and uninstall.
# (96-readme checks that the README's tools and pages are installed.)

load helper

BASEPATH=/usr/sbin:/usr/bin:/sbin:/bin

setup() {
	cd "$BATS_TEST_TMPDIR" || return 1
	unset SPIRT_STORE
	make -s -C "$SPIRT_ROOT" install DESTDIR="$PWD/root" PREFIX=/opt/spirt \
	    PYTHON="$PYTHON" >/dev/null
	BIN=$PWD/root/opt/spirt/bin
	MANDIR=$PWD/root/opt/spirt/share/man
	COMP=$PWD/root/opt/spirt/share/bash-completion/completions
}

# inst CMD...: run CMD with only the installed tools in PATH, no SPIRT_*
inst() {
	env -i HOME="$PWD" PATH="$BIN:$BASEPATH" "$@"
}

@test "install: the installed tools run a training step on their own" {
	# every tool answers -h and -V from there
	n=0
	for t in "$BIN"/*; do
		run -0 inst "${t##*/}" -h
		assert_line --index 0 --regexp "^usage: ${t##*/} "
		run -0 inst "${t##*/}" -V
		n=$((n + 1))
	done
	[ "$n" -ge 9 ]
	# they are the tree's tools, not other copies
	for t in "$BIN"/*; do cmp "$t" "$SPIRT_ROOT/${t##*/}"; done
	awk 'BEGIN { for (i = 0; i < 40; i++)
		printf "%d,%.3f,%.3f\n", i % 2, (i % 7) / 7, (i % 5) / 5 }' \
	    > train.csv
	cp train.csv test.csv
	mkdir elsewhere
	cd elsewhere
	inst spirt-shard -q -n 2 -s s.db ../train.csv
	inst spirt-shard -q -d test -s s.db ../test.csv
	inst spirt-init -s s.db -m m mlp:2-4-2
	for w in 0 1; do inst spirt-grad -s s.db -m m -t 0 -w $w -b 8; done
	inst spirt-agg -s s.db -q -t 0
	inst spirt-update -s s.db -m m -t 0
	run -0 inst spirt-eval -s s.db -m m
	assert_line 'step=1'
	# and the function under a runner's contract
	run -0 inst env Http_Query='step=1&worker=1' spirt-grad -F stdio \
	    -s s.db -m m -b 8 </dev/null
	assert_output --regexp '^\{"step":1,"worker":1,.*"key":"grad/1/1"\}$'
}

@test "install: spirt-train's loop and evaluation part in libexec/spirt, run and read from there" {
	# not tools: not in bin; the tree's files, the loop run (by the
	# front), the evaluation part read
	[ ! -e "$BIN/spirt-train-byzpeer.sh" ] && [ ! -e "$BIN/spirt-train.sh" ]
	cmp root/opt/spirt/libexec/spirt/spirt-train-byzpeer.sh \
	    "$SPIRT_ROOT/spirt-train-byzpeer.sh"
	cmp root/opt/spirt/libexec/spirt/spirt-train.sh \
	    "$SPIRT_ROOT/spirt-train.sh"
	[ -x root/opt/spirt/libexec/spirt/spirt-train.sh ]
	[ ! -x root/opt/spirt/libexec/spirt/spirt-train-byzpeer.sh ]
	# the installed spirt-train reads it: its checks answer, not 69
	echo "p0 $PWD/s0" >peers
	echo "p1 $PWD/s1" >>peers
	run -64 --separate-stderr inst SPIRT_KEY=k SPIRT_ID=p0 SPIRT_RUN=r1 \
	    spirt-train --steps 1 -s s0 --peers peers --byzantine peer:nope
	assert_equal "$stderr" 'spirt-train: --byzantine peer:nope: unknown or malformed attack "nope"'
	[ ! -e s0 ]
}

@test "install: the Python package, where python3 finds it, and spirt-torch from there" {
	# the tree's files, under $(PREFIX)/lib/python3.X/dist-packages
	v=$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
	pkg=$PWD/root/opt/spirt/lib/python$v/dist-packages/spirt
	for f in __init__ tensor torch; do
		cmp "$pkg/$f.py" "$SPIRT_ROOT/python/spirt/$f.py"
	done
	[ ! -L "$pkg/tensor.py" ]
	run -0 inst env PYTHONPATH="${pkg%/spirt}" python3 -m spirt.torch -V
	assert_output 'spirt-torch 0.1.0'
	# for the default prefix, that is a directory Debian's python3 reads
	make -s -C "$SPIRT_ROOT" install DESTDIR="$PWD/r2" PYTHON="$PYTHON" \
	    >/dev/null
	[ -f "r2/usr/local/lib/python$v/dist-packages/spirt/torch.py" ]
	"$PYTHON" -c 'import sys
assert sys.argv[1] in sys.path, sys.path' "/usr/local/lib/python$v/dist-packages"
	# the installed spirt-torch finds the installed package, no tree
	"$PYTHON" -c 'import torch' 2>/dev/null ||
	    skip "python3-torch is not installed"
	awk 'BEGIN { for (i = 0; i < 40; i++)
		printf "%d,%.3f,%.3f\n", i % 2, (i % 7) / 7, (i % 5) / 5 }' \
	    > train.csv
	printf 'from torch import nn\ndef model():\n    return nn.Linear(2, 2)\n' \
	    > lin.py
	inst spirt-shard -q -n 2 -s s.db train.csv
	inst spirt-torch init -q -s s.db -m t --module lin.py
	run -0 inst spirt-torch grad -v -s s.db -m t --module lin.py -t 0 \
	    -w 1 -b 8
	run -0 inst spirt-store -s s.db show grad/0/1
	assert_line 'name=torch:lin:6'
	assert_line 'samples=8'
}

@test "install: man shows every installed page, each its own" {
	command -v man >/dev/null || skip "man-db is not installed"
	pages=0
	for p in "$MANDIR"/man[157]/*; do
		f=${p##*/} s=${p##*.} name=${f%.*}
		[ -f "$SPIRT_ROOT/man/$f" ]
		run -0 env MANPAGER=cat MANWIDTH=80 man -M "$MANDIR" "$s" "$name"
		up=$(tr '[:lower:]' '[:upper:]' <<<"$name")
		assert_line --index 0 --regexp "^$up\\($s\\)"
		assert_line 'NAME'
		# (man writes "--" without a UTF-8 locale, as in a fresh root)
		assert_line --regexp "^ +$name (--?|—) "
		pages=$((pages + 1))
	done
	# every page of the tree is installed
	[ "$pages" -eq "$(ls "$SPIRT_ROOT"/man/*.[157] | wc -l)" ]
	# and man -k style lookup by path works for a tool's page
	run -0 env MANPATH="$MANDIR" man -w spirt-grad
	assert_output "$MANDIR/man1/spirt-grad.1"
}

# comp TOOL WORD...: what the installed completion offers for the words
# (the last one is being completed), one per line
comp() {
	inst bash --noprofile --norc -c '
		. "$1/$2"
		shift
		COMP_WORDS=("$@")
		COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
		_spirt "$1"
		printf "%s\n" "${COMPREPLY[@]}"' comp "$COMP" "$@"
}

@test "completion: every installed tool has one, and it offers every option" {
	# one completion file per tool, each completing its own tool
	diff <(cd "$BIN" && ls) <(cd "$COMP" && ls)
	for t in "$BIN"/*; do
		t=${t##*/}
		run -0 inst bash --noprofile --norc -c \
		    ". '$COMP/$t'; complete -p $t"
		assert_output "complete -F _spirt $t"
		comp "$t" - > offered
		[ -s offered ]
		# every long option the tool's -h names ...
		inst "$t" -h | grep -oE '(^| )--[a-z][-a-z0-9]*' |
		    sed 's/^ //' | sort -u > long
		# ... and every short one its usage lines name, in -abc
		# clusters or as -x arg (independent of -h's option list)
		inst "$t" -h | sed -n '/^usage:/,/^$/p' |
		    grep -oE '\[-[A-Za-z0-9]+( [a-z]+)?\]|(^| )-[A-Za-z0-9]( |$)' |
		    sed 's/^[[ ]*-//; s/[] ].*//' |
		    grep -o . | sed 's/^/-/' | sort -u > short
		[ -s long ]
		missing=$(sort -u offered | comm -23 <(sort -u long short) -)
		[ -z "$missing" ] || { echo "$t: not offered: $missing"; false; }
	done
}

@test "completion: subcommands, a prefix, and files after an option's argument" {
	run -0 comp spirt-store ''
	for c in ls show get put rm persist prune export import stat inspect; do
		assert_line "$c"
	done
	run -0 comp spirt-store p
	assert_output "$(printf 'persist\npipe\nprune\nput')"
	run -0 comp spirt-key k
	assert_output keygen
	run -0 comp spirt-peer s
	assert_output serve
	run -0 comp spirt-grad --fa
	assert_output --faas
	run -0 comp spirt-grad -F
	assert_line -F
	touch model.spt
	run -0 comp spirt-grad -p mod
	assert_output model.spt
	# after a subcommand, files
	run -0 comp spirt-store get mod
	assert_output model.spt
}

@test "uninstall removes what install put there" {
	# and what Python wrote beside the package (__pycache__)
	inst env PYTHONPATH="$(echo root/opt/spirt/lib/python3*/dist-packages)" \
	    python3 -c 'import spirt.tensor'
	ls root/opt/spirt/lib/python3*/dist-packages/spirt/__pycache__ | grep -q .
	make -s -C "$SPIRT_ROOT" uninstall DESTDIR="$PWD/root" \
	    PREFIX=/opt/spirt
	run find root -type f
	assert_output ''
}
