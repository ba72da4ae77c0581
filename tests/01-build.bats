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
	assert_equal "${stderr_lines[1]}" \
	    '  apt-get update && apt-get install -y spirt-no-such-package-xyz'
	[ -z "$output" ]
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

# the sources in ./src, without the products of the build under test
srccopy() {
	mkdir -p src/tests || return 1
	(cd "$SPIRT_ROOT" && cp -R Makefile config.mk mk cmd lib bench \
	    "$BATS_TEST_TMPDIR/src/" && cp -R tests/unit \
	    "$BATS_TEST_TMPDIR/src/tests/") || return 1
	make -s -C src clean
}

@test "make CC=clang builds every tool (no target_clones to link)" {
	command -v clang >/dev/null || skip "clang is not installed"
	srccopy
	run -0 timeout 900 make -s -C src -j2 CC=clang all
	run -0 src/spirt-agg -V
	run -0 src/spirt-grad -V
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
