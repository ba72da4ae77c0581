# mk/peer.mk - build fragment for spirt-peer and its crypto (included by
# Makefile).  The files that include <sodium.h>, crypto.h's rooms among
# them, are compiled with $(SODIUM_CFLAGS); lib/prim_$(CRYPTO).o, the AEAD
# and SHA-256 on the code config.mk's CRYPTO chose, with $(CRYPTO_CFLAGS)
# too, and every tool links $(CRYPTO_LIBS) (BASE_LIBS).  No tool links
# libcurl: lib/curldl.o dlopen()s libcurl.so.4 when a URL store
# (lib/remote.o) or -F lambda (lib/faas_lambda.o) first needs it, so a
# cold start does not load it and the thirty libraries it pulls in.
# spirt-peer links libmicrohttpd.
PEER_LIBHDR = lib/prim.h lib/vhash.h lib/crypto.h lib/keyfile.h lib/token.h \
	lib/trust.h lib/session.h lib/handshake.h lib/remote.h lib/peersrv.h lib/peerwait.h \
	lib/backend.h lib/digest.h lib/xnet.h lib/xpeer.h lib/xpull.h lib/xpart.h \
	lib/xrec.h lib/xquorum.h lib/xdecide.h lib/exchange.h lib/curldl.h \
	lib/lineage.h lib/metrics.h
PEER_LIBOBJ = lib/prim_$(CRYPTO).o lib/vhash.o $(CRYPTO_LIBOBJ) lib/remote.o \
	lib/xprec.o lib/xpart.o lib/xcheck.o lib/xproof.o \
	lib/store_http.o lib/peersrv.o lib/peerwait.o lib/peerauth.o lib/digest.o lib/xnet.o \
	lib/xpeer.o lib/xpull.o lib/xrec.o lib/xquorum.o lib/xdecide.o lib/exchange.o \
	lib/lineage.o lib/metrics.o \
	lib/curldl.o
# crypto.h's rooms, each over libsodium
CRYPTO_LIBOBJ = lib/keyfile.o lib/token.o lib/trust.o lib/session.o \
	lib/handshake.o
PEER_BIN = spirt-peer spirt-key
PEER_MAN1 = man/spirt-peer.1 man/spirt-key.1
PEER_UNIT = tests/unit/test_crypto tests/unit/test_remote tests/unit/test_digest \
	tests/unit/test_lineage
PEER_BENCH = bench/xfer_bench bench/hash_bench

lib/keyfile.o: lib/keyfile.c
	$(CC) $(ALLCFLAGS) $(SODIUM_CFLAGS) -c -o $@ lib/keyfile.c
lib/token.o: lib/token.c
	$(CC) $(ALLCFLAGS) $(SODIUM_CFLAGS) -c -o $@ lib/token.c
lib/trust.o: lib/trust.c
	$(CC) $(ALLCFLAGS) $(SODIUM_CFLAGS) -c -o $@ lib/trust.c
lib/session.o: lib/session.c
	$(CC) $(ALLCFLAGS) $(SODIUM_CFLAGS) -c -o $@ lib/session.c
lib/handshake.o: lib/handshake.c
	$(CC) $(ALLCFLAGS) $(SODIUM_CFLAGS) -c -o $@ lib/handshake.c

lib/vhash.o: lib/vhash.c
	$(CC) $(ALLCFLAGS) $(SODIUM_CFLAGS) -c -o $@ lib/vhash.c

# one of the two is built and linked (config.mk's CRYPTO)
lib/prim_openssl.o: lib/prim_openssl.c
	$(CC) $(ALLCFLAGS) $(CRYPTO_CFLAGS) $(SODIUM_CFLAGS) -c -o $@ lib/prim_openssl.c
lib/prim_sodium.o: lib/prim_sodium.c
	$(CC) $(ALLCFLAGS) $(SODIUM_CFLAGS) -c -o $@ lib/prim_sodium.c

tests/unit/test_crypto: tests/unit/test_crypto.o lib/libspirt.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ tests/unit/test_crypto.o lib/libspirt.a $(SODIUM_LIBS) $(BASE_LIBS)
tests/unit/test_crypto.o: tests/unit/check.h $(LIBHDR)
# the test checks the object linked is the one CRYPTO names
tests/unit/test_crypto.o: tests/unit/test_crypto.c
	$(CC) $(ALLCFLAGS) $(SODIUM_CFLAGS) -DCRYPTO_BUILD=\"$(CRYPTO)\" \
	    -c -o $@ tests/unit/test_crypto.c

# spirt-key's commands (cmd/key/keycmd.o) are spirt-peer's old spellings too
cmd/spirt-peer.o cmd/spirt-key.o cmd/key/keycmd.o: $(TOOLHDR) $(LIBHDR) cmd/key/keycmd.h config.mk
# its catch-up (cmd/peer/catchup.o): a rejoining peer's fetch
# and peers (cmd/peer/peers.o): the peers file's lines, for catch-up and
# a driver
cmd/spirt-peer.o cmd/peer/catchup.o cmd/peer/peers.o: $(TOOLHDR) $(LIBHDR) cmd/peer/catchup.h cmd/peer/peers.h config.mk
spirt-peer: cmd/spirt-peer.o cmd/key/keycmd.o cmd/peer/catchup.o cmd/peer/peers.o $(TOOLLIB) lib/libspirt.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ cmd/spirt-peer.o cmd/key/keycmd.o cmd/peer/catchup.o cmd/peer/peers.o $(TOOLLIB) lib/libspirt.a $(MHD_LIBS) $(BASE_LIBS)
spirt-key: cmd/spirt-key.o cmd/key/keycmd.o $(TOOLLIB) lib/libspirt.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ cmd/spirt-key.o cmd/key/keycmd.o $(TOOLLIB) lib/libspirt.a $(BASE_LIBS)

lib/remote.o: lib/remote.c
	$(CC) $(ALLCFLAGS) $(CURL_CFLAGS) $(SODIUM_CFLAGS) -c -o $@ lib/remote.c

lib/curldl.o: lib/curldl.c
	$(CC) $(ALLCFLAGS) $(CURL_CFLAGS) -c -o $@ lib/curldl.c

lib/store_http.o: lib/store_http.c lib/backend.h
	$(CC) $(ALLCFLAGS) -c -o $@ lib/store_http.c

lib/peersrv.o: lib/peersrv.c
	$(CC) $(ALLCFLAGS) $(MHD_CFLAGS) $(SODIUM_CFLAGS) -c -o $@ lib/peersrv.c
lib/peerwait.o: lib/peerwait.c
	$(CC) $(ALLCFLAGS) $(MHD_CFLAGS) -c -o $@ lib/peerwait.c
lib/peerauth.o: lib/peerauth.c
	$(CC) $(ALLCFLAGS) $(SODIUM_CFLAGS) -c -o $@ lib/peerauth.c

tests/unit/test_remote: tests/unit/test_remote.o $(TOOLLIB) lib/libspirt.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ tests/unit/test_remote.o $(TOOLLIB) lib/libspirt.a $(MHD_LIBS) $(CURL_LIBS) $(BASE_LIBS)
tests/unit/test_remote.o: tests/unit/check.h $(TOOLHDR) $(LIBHDR)
tests/unit/test_remote.o: tests/unit/test_remote.c
	$(CC) $(ALLCFLAGS) $(CURL_CFLAGS) -c -o $@ tests/unit/test_remote.c

tests/unit/test_digest: tests/unit/test_digest.o lib/libspirt.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ tests/unit/test_digest.o lib/libspirt.a $(BASE_LIBS)
tests/unit/test_digest.o: tests/unit/check.h $(LIBHDR)
tests/unit/test_digest.o: tests/unit/test_digest.c
	$(CC) $(ALLCFLAGS) $(SODIUM_CFLAGS) -c -o $@ tests/unit/test_digest.c
tests/unit/test_lineage: tests/unit/test_lineage.o lib/libspirt.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ tests/unit/test_lineage.o lib/libspirt.a $(BASE_LIBS)
tests/unit/test_lineage.o: tests/unit/check.h $(LIBHDR)
tests/unit/test_lineage.o: tests/unit/test_lineage.c
	$(CC) $(ALLCFLAGS) $(SODIUM_CFLAGS) -c -o $@ tests/unit/test_lineage.c

bench/xfer_bench: bench/xfer_bench.o $(TOOLLIB) lib/libspirt.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ bench/xfer_bench.o $(TOOLLIB) lib/libspirt.a $(BASE_LIBS)
bench/xfer_bench.o: $(TOOLHDR) $(LIBHDR)
bench/hash_bench: bench/hash_bench.o lib/libspirt.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ bench/hash_bench.o lib/libspirt.a $(BASE_LIBS)
bench/hash_bench.o: $(LIBHDR)
	$(CC) $(ALLCFLAGS) $(SODIUM_CFLAGS) -c -o $@ bench/hash_bench.c
