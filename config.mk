# spirt version
VERSION = 0.1.0

# paths
PREFIX = /usr/local
MANPREFIX = $(PREFIX)/share/man
# bash completion, one file per tool (contrib/completion/spirt.bash)
COMPDIR = $(PREFIX)/share/bash-completion/completions
# the Python package spirt (spirt-torch(1)): where python3 finds it, Debian's
# /usr/local/lib/python3.X/dist-packages for PREFIX=/usr/local (X the minor
# version of $(PYTHON) at install time)
PYTHON = python3
PYTHONDIR = $(PREFIX)/lib/python`$(PYTHON) -c 'import sys; \
	print("%d.%d" % sys.version_info[:2])' 2>/dev/null || echo 3`/dist-packages

# dependencies (Debian 12 package names are listed in deps/debian)
PKG_CONFIG = pkg-config
# upstream LMDB ships no .pc file.  Linked statically where the compiler
# finds LMDB_STATIC (Debian's liblmdb-dev has liblmdb.a): one shared
# library less to load at each start, and its malloc() calls go through
# spirt's wrapper (lib/mem.h).  Where there is none the default falls back
# to -llmdb, which works too, only without huge pages for LMDB's in-memory
# records; LMDB_LIBS=-llmdb asks for that outright.
LMDB_STATIC = liblmdb.a
LMDB_LIBS = `f=$$($(CC) -print-file-name=$(LMDB_STATIC)); \
	test -f "$$f" && echo "$$f" || echo -llmdb` -pthread
# every malloc() of spirt and static LMDB through lib/mem.c, by GNU ld's
# (or lld's) --wrap.  With another linker build with WRAP_LDFLAGS= (empty):
# WRAP_CPPFLAGS follows it and lib/mem.c leaves the wrapper out.
WRAP_LDFLAGS = -Wl,--wrap=malloc -Wl,--undefined=__wrap_malloc
WRAP_CPPFLAGS = `test -z "$(WRAP_LDFLAGS)" || echo -DSPIRT_WRAP_MALLOC`
XXHASH_CFLAGS = `$(PKG_CONFIG) --cflags libxxhash`
XXHASH_LIBS = `$(PKG_CONFIG) --libs libxxhash`
# older OpenBLAS installs lack openblas.pc: override both when needed
BLAS_CFLAGS = `$(PKG_CONFIG) --cflags openblas`
BLAS_LIBS = `$(PKG_CONFIG) --libs openblas`
ZLIB_LIBS = -lz
# libjansson reads the JSON a FaaS runner sends spirt-grad (lib/faas.c)
# and a gateway's answers to spirt-invoke (lib/invoke.c)
JANSSON_CFLAGS = `$(PKG_CONFIG) --cflags jansson`
JANSSON_LIBS = `$(PKG_CONFIG) --libs jansson`
SODIUM_CFLAGS = `$(PKG_CONFIG) --cflags libsodium`
SODIUM_LIBS = `$(PKG_CONFIG) --libs libsodium`
CURL_CFLAGS = `$(PKG_CONFIG) --cflags libcurl`
CURL_LIBS = `$(PKG_CONFIG) --libs libcurl`
MHD_CFLAGS = `$(PKG_CONFIG) --cflags libmicrohttpd`
MHD_LIBS = `$(PKG_CONFIG) --libs libmicrohttpd`
# dlopen(): OpenBLAS and libcurl are loaded at run time
DL_LIBS = -ldl

# the messages' AEAD and the values' SHA-256 (lib/prim.h): openssl links
# OpenSSL 3's libcrypto (libssl-dev) for them, 2.2 and 5.6 times
# libsodium's speed (docs/performance.md); sodium runs libsodium's code
# alone.  The same bytes either way; the build links lib/prim_$(CRYPTO).o,
# and `spirt-peer -V` says which.  Both are tested (.ci/run).
CRYPTO = openssl
CRYPTO_CFLAGS = `test "$(CRYPTO)" != openssl || \
	$(PKG_CONFIG) --cflags libcrypto`
CRYPTO_LIBS = `test "$(CRYPTO)" != openssl || \
	$(PKG_CONFIG) --libs libcrypto`

INCS = $(XXHASH_CFLAGS) $(BLAS_CFLAGS)

# flags: CFLAGS, CPPFLAGS, LDFLAGS are the user's; warnings stay on.
# -ffp-contract=off: no a * b + c fused into one FMA, which rounds once
# instead of twice; GCC does not fuse in ISO C mode, Clang does by
# default, and only where the target has FMA (the AVX-512 copies of the
# kernels, lib/vec.h), so aggregates and updates would differ by CPU.
CC = cc
CFLAGS = -O2 -g
SPIRT_CPPFLAGS = -Ilib -Icmd -D_POSIX_C_SOURCE=200809L \
	-DSPIRT_VERSION_MK=\"$(VERSION)\" $(WRAP_CPPFLAGS)
SPIRT_CFLAGS = -std=c11 -ffp-contract=off -Wall -Wextra -Wpedantic -Wshadow \
	-Wvla -Werror
LDFLAGS =
AR = ar
ARFLAGS = rcs
