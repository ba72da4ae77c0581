# tests/blocks.bash - run a document's examples as typed: the shell blocks
# of README.md (tests/96-readme.bats) and the EXAMPLES displays of a man
# page (tests/96-manpage-examples.bats), in one bash, in order
#
#   load blocks
#   n=$(readme_blocks README.md b)       # or: man_blocks man/x.1 b
#   run_blocks "$PWD/b" "$n" "$PWD/tree" [seconds]
#   kill_blocks b                        # in teardown(): what they left

# the directories a fresh Debian root's PATH holds: none has the tools
BASEPATH=/usr/sbin:/usr/bin:/sbin:/bin

# readme_blocks README DIR: write the run-here blocks of README as DIR/1.sh,
# DIR/2.sh, ... (and the README line each starts at as DIR/N.line); print
# their number.  Fails, naming the line, on a fence of another kind, an
# indented code block or an unclosed fence.
readme_blocks() {
	awk -v dir="$2" -v kinds='```sh, ```sh fresh-root or ```text' '
	function fail(m) {
		printf "%s:%d: %s\n", FILENAME, NR, m > "/dev/stderr"
		bad = 1
		exit 1
	}
	/^```/ && !fence {
		kind = substr($0, 4)
		sub(/^[ \t]+/, "", kind)
		sub(/[ \t]+$/, "", kind)
		fence = NR
		out = ""
		if (kind == "sh") {
			out = dir "/" ++n ".sh"
			printf "" > out
			print NR + 1 > (dir "/" n ".line")
			close(dir "/" n ".line")
		} else if (kind != "sh fresh-root" && kind != "text")
			fail("fence \"```" kind "\": " kinds)
		next
	}
	/^```[ \t]*$/ && fence {
		fence = 0
		if (out != "")
			close(out)
		next
	}
	fence {
		if (out != "")
			print > out
		next
	}
	/^(    |\t)/ && blank {
		fail("indented code block: fence it as " kinds)
	}
	{ blank = ($0 ~ /^[ \t]*$/) }
	END {
		if (bad)
			exit 1
		if (fence) {
			printf "%s:%d: fence not closed\n", FILENAME, fence \
			    > "/dev/stderr"
			exit 1
		}
		print n + 0
	}' "$1"
}

# run_blocks DIR N TREE [SECONDS]: run DIR/1.sh .. DIR/N.sh in order in one
# bash, in TREE, as typed, with set -e and pipefail, each block's output in
# DIR/i.out, all of it within SECONDS (600).  On a failure, print which
# block failed, its text and its output, and return 1.  Temporary files
# (mktemp) go to DIR/tmp.  The run is a process group of its own (timeout
# makes it one), whose id is DIR/pgid: kill_blocks DIR ends what a block
# left running in the background.  DIR/what names the document ("README").
run_blocks() {
	local d=$1 n=$2 tree=$3 secs=${4:-600} i rc what=README
	[ ! -s "$d/what" ] || what=$(cat "$d/what")
	mkdir -p "$d/tmp" "$d/home"
	{
		echo 'set -e -o pipefail'
		for ((i = 1; i <= n; i++)); do
			printf '. %q >%q 2>&1\n' "$d/$i.sh" "$d/$i.out"
			printf 'echo %d >>%q\n' "$i" "$d/done"
		done
	} > "$d/all.sh"
	: > "$d/done"
	rc=0
	(cd "$tree" && echo "$BASHPID" > "$d/pgid" &&
	    exec timeout -k 10 "$secs" env -i HOME="$d/home" \
	    PATH="${BLOCKS_PATH:-$BASEPATH}" TMPDIR="$d/tmp" \
	    bash --noprofile --norc "$d/all.sh" </dev/null) || rc=$?
	[ "$rc" -eq 0 ] && [ "$(wc -l < "$d/done")" -eq "$n" ] && return 0
	i=$(($(wc -l < "$d/done") + 1))
	[ "$rc" -ne 124 ] || rc="$rc, timed out"
	echo "$what block $i of $n (line $(cat "$d/$i.line")) failed" \
	    "(exit $rc):"
	sed 's/^/    /' "$d/$i.sh"
	echo "its output:"
	sed 's/^/    /' "$d/$i.out" 2>/dev/null
	return 1
}

# group_live G: process group G has a process that is not a zombie (where
# PID 1 reaps no orphans, as in some containers, the dead stay zombies)
group_live() {
	ps -e -o pgid=,stat= | awk -v g="$1" '$1 == g && $2 !~ /^Z/ { n++ }
	    END { exit !n }'
}

# kill_blocks DIR: end every process run_blocks DIR left (its process
# group: servers a block started in the background), SIGTERM, then
# SIGKILL after 5 s; nothing if none is left
kill_blocks() {
	local g i
	[ -s "$1/pgid" ] || return 0
	g=$(cat "$1/pgid")
	group_live "$g" || return 0
	kill -TERM -- "-$g" 2>/dev/null || return 0
	for ((i = 0; i < 50; i++)); do
		group_live "$g" || return 0
		sleep 0.1
	done
	kill -KILL -- "-$g" 2>/dev/null || :
}

# man_blocks PAGE DIR: write the commands of the literal displays
# (.Bd -literal ... .Ed) in PAGE's EXAMPLES as DIR/1.sh, DIR/2.sh, ... (one
# file a display that has commands; the page's line of its first command in
# DIR/N.line, and the command lines as the display shows them, prompt
# included, in DIR/N.shown); print their number.  In a display, a line
# "$ command" is a command typed at the prompt, and the indented lines after
# it continue it (a loop's body, a line after a backslash); any other line
# is what the commands print, and is not run.  The escapes \e, \- and \& are
# read as mandoc prints them (\, - and nothing); any other escape, or a
# request in a display, fails naming its line, and so does a page without
# EXAMPLES or with an unclosed display.
man_blocks() {
	awk -v dir="$2" '
	function fail(m) {
		printf "%s:%d: %s\n", FILENAME, NR, m > "/dev/stderr"
		bad = 1
		exit 1
	}
	/^\.Sh / { ex = ($0 == ".Sh EXAMPLES"); seen += ex; next }
	!ex { next }
	/^\.Bd -literal/ { lit = NR; cmd = 0; out = ""; next }
	!lit { next }
	/^\.Ed[ \t]*$/ {
		lit = 0
		if (out != "") {
			close(out)
			close(shown)
		}
		next
	}
	/^[.\047]/ { fail("a request in a literal display") }
	{
		line = $0
		s = ""
		while ((i = index(line, "\\")) > 0) {
			c = substr(line, i + 1, 1)
			if (c == "e")
				r = "\\"
			else if (c == "-")
				r = "-"
			else if (c == "&")
				r = ""
			else
				fail("escape \\" c ": only \\e, \\- and \\& in a " \
				    "display that is run")
			s = s substr(line, 1, i - 1) r
			line = substr(line, i + 2)
		}
		line = s line
		if (line ~ /^\$ /) {
			if (out == "") {
				out = dir "/" ++n ".sh"
				shown = dir "/" n ".shown"
				printf "" > out
				print NR > (dir "/" n ".line")
				close(dir "/" n ".line")
			}
			print substr(line, 3) > out
			print line > shown
			cmd = 1
		} else if (cmd && line ~ /^[ \t]/) {
			print line > out
			print line > shown
		} else
			cmd = 0
	}
	END {
		if (bad)
			exit 1
		if (!seen) {
			printf "%s: no EXAMPLES\n", FILENAME > "/dev/stderr"
			exit 1
		}
		if (lit) {
			printf "%s:%d: display not closed\n", FILENAME, lit \
			    > "/dev/stderr"
			exit 1
		}
		print n + 0
	}' "$1"
}

# copy_tree DEST: the tree as a fresh clone has it (git's files, or every
# file but .git and demo/ outside a git checkout), plus the tools `make all`
# built, mtimes kept
copy_tree() {
	mkdir -p "$1"
	(
		cd "$SPIRT_ROOT" || exit 1
		# (a fresh root has no git: find lists the files, symlinks
		# too, as python/spirt/tensor.py is one)
		{
			git ls-files 2>/dev/null ||
			    find . -path ./.git -prune -o -path ./demo -prune \
			    -o \( -type f -o -type l \) -print
			for f in spirt-*; do
				[ -f "$f" ] && [ -x "$f" ] && echo "$f"
			done
			# (and what they read: spirt-train's evaluation part)
			echo spirt-train-byzpeer.sh
		} | while IFS= read -r f; do
			[ -f "$f" ] && printf '%s\n' "$f"
		done | tar -cf - -T -
	) | tar -xf - -C "$1"
}

fmnist_or_skip() {
	[ -r "$FMNIST/train-images-idx3-ubyte.gz" ] ||
		skip "no Fashion-MNIST (Debian package dataset-fashion-mnist)"
}

