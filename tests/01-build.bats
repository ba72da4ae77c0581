#!/usr/bin/env bats
# 01-build: bootstrap's dependency check, make install / uninstall

load helper

@test "bootstrap as non-root with a package missing prints the apt-get line, exit 69" {
	[ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null ||
		skip "needs root and setpriv to drop privileges"
	# nobody cannot enter the test's private temporary directory
	b=$(mktemp -d /tmp/spirt-boot.XXXXXX)
	mkdir -p "$b/deps"
	cp "$SPIRT_ROOT/bootstrap" "$b/"
	printf '# test list\nbash\nspirt-no-such-package-xyz\n' > "$b/deps/debian"
	chmod -R a+rX "$b"
	run -69 --separate-stderr setpriv --reuid=65534 --regid=65534 \
	    --clear-groups sh "$b/bootstrap" check
	rm -rf "$b"
	assert_equal "${stderr_lines[1]}" "  apt-get update && apt-get install \
-y --no-install-recommends spirt-no-such-package-xyz"
	[ -z "$output" ]
}

@test "bootstrap as root installs the same set it tells a non-root user to" {
	[ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null ||
		skip "needs root and setpriv to drop privileges"
	b=$(mktemp -d /tmp/spirt-boot.XXXXXX)
	mkdir -p "$b/deps"
	cp "$SPIRT_ROOT/bootstrap" "$b/"
	printf 'bash\nspirt-no-such-package-xyz\nspirt-nor-this-one\n' \
	    > "$b/deps/debian"
	chmod -R a+rX "$b"
	run -69 --separate-stderr setpriv --reuid=65534 --regid=65534 \
	    --clear-groups sh "$b/bootstrap"
	user=${stderr_lines[1]}
	# root's run, with an apt-get that only records what it is asked
	mkdir stub
	printf '#!/bin/sh\necho "apt-get $*" >>"%s/apt.log"\n' "$PWD" \
	    > stub/apt-get
	chmod +x stub/apt-get
	PATH="$PWD/stub:$PATH" run -0 --separate-stderr sh "$b/bootstrap"
	rm -rf "$b"
	run -0 cat apt.log
	assert_equal "${#lines[@]}" 2
	assert_equal "${lines[0]}" 'apt-get update'
	assert_equal "  apt-get update && ${lines[1]}" "$user"
	[[ $user == *' --no-install-recommends '* ]]
	[[ $user == *' spirt-no-such-package-xyz spirt-nor-this-one' ]]
}

# fakeroot_apt FAIL: b/bootstrap with a list of two packages, and stand-ins
# first in PATH: id says root, dpkg-query says nothing is installed, and
# apt-get records its arguments (and DEBIAN_FRONTEND) in apt.log, prints
# 200 lines ("apt N", half on stderr) and fails with 100 when its first
# argument is FAIL (update or install)
fakeroot_apt() {
	mkdir -p b/deps stub tmp
	cp "$SPIRT_ROOT/bootstrap" b/
	printf '# test list\nspirt-fake-a\nspirt-fake-b\n' > b/deps/debian
	printf '#!/bin/sh\necho 0\n' > stub/id
	printf '#!/bin/sh\nexit 1\n' > stub/dpkg-query
	cat > stub/apt-get <<-EOF
	#!/bin/sh
	echo "apt-get \$* (\$DEBIAN_FRONTEND)" >>"$PWD/apt.log"
	i=0
	while [ \$i -lt 200 ]; do
		i=\$((i + 1))
		if [ \$((i % 2)) -eq 0 ]; then echo "apt \$i"; else echo "apt \$i" >&2; fi
	done
	[ "\$1" != "$1" ] || exit 100
	EOF
	chmod +x stub/*
}

@test "bootstrap installs quietly: a line before, a line after, apt-get's output kept out" {
	fakeroot_apt none
	TMPDIR=$PWD/tmp PATH="$PWD/stub:$PATH" run -0 --separate-stderr \
	    sh b/bootstrap
	assert_equal "$output" ''
	assert_equal "$stderr" "$(printf '%s\n' \
	    'bootstrap: installing 2 packages: spirt-fake-a spirt-fake-b' \
	    'bootstrap: installed')"
	run -0 cat apt.log
	assert_equal "$output" "$(printf '%s\n' \
	    'apt-get update (noninteractive)' \
	    'apt-get install -y --no-install-recommends spirt-fake-a spirt-fake-b (noninteractive)')"
	# the log is gone, and the arguments after the install go to make
	[ -z "$(ls tmp)" ]
	TMPDIR=$PWD/tmp PATH="$PWD/stub:$PATH" run -0 --separate-stderr \
	    sh b/bootstrap --version
	assert_line --index 0 --partial 'GNU Make'
	[ "${#stderr_lines[@]}" -eq 2 ]
}

@test "bootstrap: a failing apt-get is loud: its last lines and its exit status" {
	fakeroot_apt install
	TMPDIR=$PWD/tmp PATH="$PWD/stub:$PATH" run -100 --separate-stderr \
	    sh b/bootstrap check
	assert_equal "$output" ''
	assert_equal "${#stderr_lines[@]}" 22
	assert_equal "${stderr_lines[1]}" \
	    'bootstrap: apt-get install failed (exit 100); the end of its output:'
	for i in $(seq 181 200); do
		assert_equal "${stderr_lines[i - 179]}" "apt $i"
	done
	[ -z "$(ls tmp)" ]
	# a failed update installs nothing
	rm apt.log
	fakeroot_apt update
	TMPDIR=$PWD/tmp PATH="$PWD/stub:$PATH" run -100 --separate-stderr \
	    sh b/bootstrap
	assert_equal "${stderr_lines[1]}" \
	    'bootstrap: apt-get update failed (exit 100); the end of its output:'
	run -0 cat apt.log
	assert_output 'apt-get update (noninteractive)'
	[ -z "$(ls tmp)" ]
}

@test "sh ./bootstrap check runs bootstrap once: make check does not" {
	run -0 make -n -C "$SPIRT_ROOT" check
	refute_output --partial bootstrap
}

@test "bootstrap with everything installed does nothing and exits 0" {
	mkdir -p b/deps
	cp "$SPIRT_ROOT/bootstrap" b/
	printf 'bash\ncoreutils\n' > b/deps/debian
	run -0 --separate-stderr sh b/bootstrap
	assert_equal "$stderr" ''
}

@test "the real package list is installed here (CI ran bootstrap)" {
	run -0 sh "$SPIRT_ROOT/bootstrap"
}

@test "make install puts tools and man pages under DESTDIR/PREFIX; uninstall removes them" {
	run -0 make -s -C "$SPIRT_ROOT" install DESTDIR="$PWD/root" PREFIX=/opt/s
	[ -x root/opt/s/bin/spirt-store ]
	[ -f root/opt/s/share/man/man1/spirt-store.1 ]
	[ -f root/opt/s/share/man/man5/spirt-tensor.5 ]
	[ -f root/opt/s/share/man/man7/spirt.7 ]
	run -0 root/opt/s/bin/spirt-store -V
	run -0 make -s -C "$SPIRT_ROOT" uninstall DESTDIR="$PWD/root" PREFIX=/opt/s
	[ ! -e root/opt/s/bin/spirt-store ]
	[ ! -e root/opt/s/share/man/man1/spirt-store.1 ]
	[ ! -e root/opt/s/share/man/man7/spirt.7 ]
}

# ---- other builds, in a copy of the tree (some 30-90 s each) ----

# srccopy [DIR]: the sources in DIR (default ./src), without the products
# of the build under test (make all builds tests/wire too)
srccopy() {
	local d
	d=$(pwd)/${1:-src}
	mkdir -p "$d/tests" || return 1
	(cd "$SPIRT_ROOT" && cp -R Makefile config.mk mk cmd lib bench "$d/" &&
	    cp -R tests/unit tests/wire.c "$d/tests/") || return 1
	make -s -C "$d" clean
}

# othercrypto: the crypto back end this build does not use (sets this,
# other, and want: what the other build's spirt-peer -V names)
othercrypto() {
	this=$(spirt-peer -V | sed -n 's/^crypto: \([a-z]*\) (.*)$/\1/p')
	case $this in
	openssl) other=sodium want=libsodium ;;
	libsodium) other=openssl want=openssl ;;
	*) fail "spirt-peer -V names no crypto: $this" ;;
	esac
}

# otherbuild: one build, in ./src (a link to the file's), of what the
# CRYPTO and the WRAP_LDFLAGS tests below each check: the other crypto
# back end, no malloc wrapper, and a liblmdb.a the compiler cannot find
# (LMDB_STATIC names no file, as on a system without one: the default
# LMDB_LIBS falls back to -llmdb).  The first test to ask makes it, the
# other waits for it (bats --jobs); each alone took 50-60 s at load 6
otherbuild() {
	local b=$BATS_FILE_TMPDIR/other
	othercrypto
	(
		flock 9 || exit 1
		[ ! -e "$b/built" ] || exit 0
		rm -rf "$b" && (cd "$BATS_FILE_TMPDIR" && srccopy other) &&
		    timeout 900 make -s -C "$b" -j2 CRYPTO="$other" \
		    WRAP_LDFLAGS= LMDB_STATIC=no-such-liblmdb.a all \
		    tests/unit/test_crypto tests/unit/test_mem \
		    tests/unit/test_store >"$b.log" 2>&1 ||
		    { cat "$b.log" >&2; exit 1; }
		touch "$b/built"
	) 9>"$BATS_FILE_TMPDIR/other.lock" || return 1
	ln -s "$b" src
}

# The other builds prove the build files, not the code under test: CI's
# sanitizer pass (make check CFLAGS=-fsanitize=...) would only repeat them,
# slower, so they run in the plain pass.
other_builds() {
	case ${SPIRT_CHECK_CFLAGS-} in
	*-fsanitize*) skip "other builds: run in the plain (unsanitized) pass" ;;
	esac
}


@test "SPIRT_ISA: an unknown level, or one the CPU lacks, is a usage error" {
	for t in "spirt-agg g.rec" "spirt-update -m m -t 0" \
	    "spirt-grad -m m -t 0" "spirt-eval -m m -t 0"; do
		SPIRT_ISA=sse9 run -64 --separate-stderr $t
		assert_equal "$stderr" \
		    "${t%% *}: SPIRT_ISA: \"sse9\": not base, avx2 or avx512"
	done
	grep -qw avx512f /proc/cpuinfo && grep -qw avx2 /proc/cpuinfo &&
		return 0        # it has every level
	lack=avx512
	grep -qw avx2 /proc/cpuinfo || lack=avx2
	SPIRT_ISA=$lack run -64 --separate-stderr spirt-agg g.rec
	[[ "$stderr" == *"SPIRT_ISA: \"$lack\": this CPU lacks it (best: "* ]]
}

# isadata: gradient records g0..g8.rec of n floats of mixed magnitudes
# (so a reassociated sum or a fused multiply-add rounds differently), a
# model m.rec at step 3 and a second aggregate a4.rec at step 4
isadata() {
	"$PYTHON" -c "$PYREC
rng = np.random.default_rng(5)
n = 10007
def vec(lo, hi):
    return (rng.uniform(-1, 1, n) *
            2.0 ** rng.integers(lo, hi, n)).astype(np.float32)
for w in range(9):
    open('g%d.rec' % w, 'wb').write(st.encode(vec(-12, 12), name='m:%d' % n,
        step=3, origin=w, samples=8 + w, loss=1.0))
open('m.rec', 'wb').write(st.encode(vec(-8, 8), name='m:%d' % n, step=3))
open('a4.rec', 'wb').write(st.encode(vec(-12, 12), name='m:%d' % n, step=4))
"
}

# isarun DIR: every rule and every optimiser (two steps, so the state is
# used) into DIR/, with the tools in PATH
isarun() {
	local d=$1 r o
	mkdir -p "$d" || return 1
	for r in mean wmean "trim --trim 0.25" median norm \
	    "krum --byzantine 2" "mkrum --byzantine 1"; do
		spirt-agg -q -r $r g?.rec >"$d/${r%% *}.rec" || return 1
	done
	for o in sgd momentum nesterov adam adamw; do
		set -- --opt $o --wd 0.01 -r 0.03
		[ $o = nesterov ] && set -- --opt momentum --nesterov -r 0.03
		spirt-update -q -p m.rec -o "$d/u.rec" "$@" "$d/wmean.rec" &&
		spirt-update -q -p "$d/u.rec" -o "$d/u-$o.rec" "$@" a4.rec ||
			return 1
	done
	rm "$d/u.rec"
}

@test "every rule and optimiser gives the same bytes at every ISA level" {
	isadata
	SPIRT_ISA=base isarun base
	[ "$(ls base | wc -l)" -eq 12 ]
	n=0
	for l in avx2 avx512; do
		# the flags the kernel shows are those the OS supports too
		if ! grep -qw "$l$([ $l = avx512 ] && echo f)" /proc/cpuinfo
		then
			echo "# this CPU lacks $l: not compared" >&3
			continue
		fi
		SPIRT_ISA=$l isarun $l
		for f in base/*; do
			cmp "$f" "$l/${f#base/}"
		done
		n=$((n + 1))
	done
	echo "# levels compared with base: $n" >&3
}

@test "make CC=clang builds every tool; its kernels give this build's bytes" {
	command -v clang >/dev/null || skip "clang is not installed"
	other_builds
	srccopy
	run -0 timeout 900 make -s -C src -j2 CC=clang all \
	    tests/unit/test_agg tests/unit/test_optim
	run -0 src/spirt-grad -V
	run -0 src/tests/unit/test_agg
	run -0 src/tests/unit/test_optim
	isadata
	isarun cc
	PATH="$PWD/src:$PATH" isarun clang
	for f in cc/*; do
		cmp "$f" "clang/${f#cc/}"
	done
}

@test "make CRYPTO=<the other>: the code it names, libcrypto only with openssl, the same bytes as this build's, both ways" {
	local this other want t
	other_builds
	otherbuild
	run -0 src/spirt-peer -V
	[[ ${lines[1]} == "crypto: $want ("*")" ]] || fail "$output"
	run -0 src/tests/unit/test_crypto
	# libcrypto is linked by the openssl build, not loaded at run time
	for t in "$this:$SPIRT_ROOT/spirt-store" "$want:src/spirt-store"; do
		run -0 ldd "${t#*:}"
		if [ "${t%%:*}" = openssl ]; then
			assert_output --partial libcrypto.so
		else
			refute_output --partial libcrypto
		fi
	done
	# a member's get and put of a value of several frames, each end on
	# the other build's code: the wire bytes do not depend on CRYPTO
	spirt-peer keygen -p group.pub group.key >/dev/null
	for m in p1 p2; do
		spirt-peer keygen $m.key >$m.hex
		spirt-peer invite -o $m.tok -g group.key -i $m -r r1 \
		    "$(cat $m.hex)"
	done
	spirt-init -m big mlp:784-32-10
	spirt-store get -f model/big@0 >big.rec
	[ "$(wc -c <big.rec)" -gt 100000 ]
	export SPIRT_KEY=p2.key SPIRT_TOKEN=p2.tok SPIRT_GROUP=group.pub
	for t in "$SPIRT_ROOT/spirt-peer:src/spirt-store" \
	    "src/spirt-peer:$SPIRT_ROOT/spirt-store"; do
		rm -f ready got.rec
		mkfifo ready
		timeout -k 10 120 "${t%%:*}" serve -k p1.key -T p1.tok \
		    -g group.pub -l 127.0.0.1:0 -F 3 3>ready 2>srv.log &
		read -r -t 30 addr <ready || { cat srv.log; false; }
		"${t#*:}" -s "http://$addr" get -f model/big@0 >got.rec
		cmp big.rec got.rec
		"${t#*:}" -s "http://$addr" put beat/p2 big.rec
		kill -TERM $!
		wait $!
		grep -q '^spirt-peer: stopped: [0-9]* served, 0 refused$' \
		    srv.log
		spirt-store get -f beat/p2 | cmp - big.rec
		spirt-store rm beat/p2
	done
}

@test "make WRAP_LDFLAGS=, and no liblmdb.a: no malloc wrapper, shared LMDB by default" {
	local this other want
	other_builds
	otherbuild
	# the wrapper is left out with the flag that would resolve it
	run -0 nm src/lib/mem.o
	refute_output --partial __real_malloc
	run -0 readelf -d src/spirt-store
	assert_output --partial 'Shared library: [liblmdb.so'
	run -77 src/tests/unit/test_mem
	run -0 src/tests/unit/test_store
	# the tools work, and give this build's bytes
	isadata
	isarun cc
	PATH="$PWD/src:$PATH" isarun plain
	for f in cc/*; do
		cmp "$f" "plain/${f#cc/}"
	done
	src/spirt-store -s s.db put grad/3/0 g0.rec
	src/spirt-store -s s.db get grad/3/0 >back.rec
	cmp g0.rec back.rec
}

@test "lib/ layering: includes follow docs/contracts.md; lib/ never prints" {
	# level of each module, from the table in docs/contracts.md
	declare -A lvl
	while IFS='|' read -r _ l mods _; do
		l=${l// /}
		for m in ${mods//,/ }; do
			lvl[$m]=$l
		done
	done < <(sed -n '/^## Layering of lib/,/^## /p' \
	    "$SPIRT_ROOT/docs/contracts.md" | grep -E '^\| [0-9] \|')
	[ "${lvl[store]}" = 2 ]         # the table was read
	# a module is its .c and .h; gradctx.h is grad's insides, datain.h
	# data's, xpartin.h xpart's, vec.h the kernel half of isa, prim_*.c prim.h's
	# implementations (the build links one)
	# (sets m, no subshell: this runs a few thousand times)
	mod() {
		m=${1##*/} m=${m%.*}
		case $m in gradctx) m=grad ;; datain) m=data ;; xpartin) m=xpart ;; vec) m=isa ;; prim_*) m=prim ;; esac
	}
	bad=
	for f in "$SPIRT_ROOT"/lib/*.c "$SPIRT_ROOT"/lib/*.h; do
		mod "$f"; fm=$m
		[ -n "${lvl[$fm]}" ] || { bad="$bad $fm:not-in-table"; continue; }
		for h in $(sed -n 's/^#include "\([a-z]*\)\.h"$/\1/p' "$f"); do
			case $h:$f in
			gradctx:*/grad.c|gradctx:*/eval.c) continue ;;
			gradctx:*) bad="$bad $f:gradctx.h"; continue ;;
			xpartin:*/xpart.c|xpartin:*/xcheck.c) continue ;;
			xpartin:*) bad="$bad $f:xpartin.h"; continue ;;
			tool:*) bad="$bad $f:tool.h"; continue ;;
			esac
			mod "$h"
			[ "${lvl[$m]}" -le "${lvl[$fm]}" ] ||
			    bad="$bad $f:$m"
		done
	done
	# no cycle within a level: the include graph of lib/ sorts
	for f in "$SPIRT_ROOT"/lib/*.[ch]; do
		mod "$f"; fm=$m
		for h in $(sed -n 's/^#include "\([a-z]*\)\.h"$/\1/p' "$f"); do
			mod "$h"
			[ "$m" = "$fm" ] || echo "$m $fm"
		done
	done | tsort > /dev/null 2> "$BATS_TEST_TMPDIR/tsort" || true
	! grep -q . "$BATS_TEST_TMPDIR/tsort" ||
	    bad="$bad cycle:$(cat "$BATS_TEST_TMPDIR/tsort")"
	# LMDB below the store only; no messages or exits from the library
	for f in "$SPIRT_ROOT"/lib/*.c; do
		case $f in */store.c|*/spirt.c) ;; *)
			grep -q '<lmdb.h>' "$f" && bad="$bad $f:lmdb.h" ;; esac
		grep -nE '(^|[^a-z_])(printf|fprintf|perror|exit|abort)\(|\bstderr\b' \
		    "$f" && bad="$bad $f:prints"
	done
	[ -z "$bad" ] || { echo "layering:$bad"; false; }
}

@test "lib/ reads and sets no environment and installs no signal handler" {
	# the tools' layer, cmd/tool.c, resolves option, environment, default
	# and hands lib its configuration (docs/contracts.md, "Layering")
	[ ! -e "$SPIRT_ROOT/lib/tool.c" ] && [ ! -e "$SPIRT_ROOT/lib/tool.h" ]
	[ -f "$SPIRT_ROOT/cmd/tool.c" ] && [ -f "$SPIRT_ROOT/cmd/tool.h" ]
	# each call, with the function it is in
	run -0 awk '
	    /^[a-z_0-9]+\(/ { fn = $0; sub(/\(.*/, "", fn) }
	    /(^|[^a-z_])(getenv|secure_getenv|setenv|unsetenv|putenv|clearenv|sigaction|signal|bsd_signal|sysv_signal)\(|struct sigaction|[^a-z_]environ[^a-z_]/ {
		f = FILENAME; sub(/.*\//, "", f)
		print f ":" fn ":" $0
	    }' "$SPIRT_ROOT"/lib/*.c "$SPIRT_ROOT"/lib/*.h
	# but one: a child's dispositions back to the defaults, between fork
	# and exec (supervise.c's child_exec; it installs no handler)
	allowed=$'supervise.c:child_exec:\t\tsignal(sigs[i], SIG_DFL);'
	assert_line "$allowed"
	printf '%s\n' "$output" | grep -vxF "$allowed" && fail "in lib/" || :
}

@test "the fuzz build's checksum bypass (-DSPIRT_FUZZ) is in no tool" {
	# set by mk/fuzz.mk alone, for the fuzzers' objects (lib/*.fo)
	run -0 grep -l SPIRT_FUZZ "$SPIRT_ROOT"/Makefile "$SPIRT_ROOT"/config.mk \
	    "$SPIRT_ROOT"/mk/*.mk
	assert_output "$SPIRT_ROOT/mk/fuzz.mk"
	run -0 grep -c '^\.c\.fo:$' "$SPIRT_ROOT"/mk/fuzz.mk
	# and the tools built here compare both checksums
	spirt-init -q -m m -o m.rec mlp:2-3-2
	run -0 spirt-store inspect m.rec
	for at in header payload; do
		"$PYTHON" - "$at" m.rec bad.rec <<'PY'
import struct, sys
r = bytearray(open(sys.argv[2], 'rb').read())
h, = struct.unpack_from('<I', r, 8)
n, = struct.unpack_from('<Q', r, 48)
r[h - 1 if sys.argv[1] == 'header' else h + n + 15] ^= 1
open(sys.argv[3], 'wb').write(r)
PY
		run -65 --separate-stderr spirt-store inspect bad.rec
		[[ $stderr == *checksum* || $stderr == *corrupt* ]] ||
			fail "$at: $stderr"
	done
}

@test "bench/nocrypto.patch (a measurement only) still applies, and its switch is in no tool" {
	# bench/peer.sh NOCRYPTO=1 applies it to a copy of the tree; a
	# change to lib/prim_*.c or lib/vhash.c that breaks it must be seen
	# here, not in a benchmark run
	command -v git >/dev/null || skip "no git"
	mkdir lib
	cp "$SPIRT_ROOT/lib/prim_openssl.c" "$SPIRT_ROOT/lib/prim_sodium.c" \
	    "$SPIRT_ROOT/lib/vhash.c" lib/
	run -0 git apply --check <"$SPIRT_ROOT/bench/nocrypto.patch"
	git apply <"$SPIRT_ROOT/bench/nocrypto.patch"
	for f in prim_openssl prim_sodium vhash; do
		grep -q SPIRT_MEASURE_NOCRYPTO lib/$f.c
	done
	# the tools and the library built here never read it
	run -1 grep -l SPIRT_MEASURE_NOCRYPTO "$SPIRT_ROOT"/spirt-* \
	    "$SPIRT_ROOT"/lib/*.[ch] "$SPIRT_ROOT"/lib/libspirt.a
}
