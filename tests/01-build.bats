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
	assert_equal "${lines[0]}" 'apt-get update -qq'
	assert_equal "  apt-get update && ${lines[1]/ -qq/}" "$user"
	[[ $user == *' --no-install-recommends '* ]]
	[[ $user == *' spirt-no-such-package-xyz spirt-nor-this-one' ]]
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
