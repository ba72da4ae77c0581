# mk/peer.mk - build fragment for spirt-peer and its crypto (included by
# Makefile).  Only lib/crypto.o includes <sodium.h>; what links it adds
# $(SODIUM_LIBS).  No tool links libcurl: lib/curldl.o dlopen()s
# libcurl.so.4 when a URL store (lib/remote.o) or -F lambda
# (lib/faas_lambda.o) first needs it, so a cold start does not load it and
# the thirty libraries it pulls in.  spirt-peer links libmicrohttpd.
PEER_LIBHDR = lib/ossl.h lib/imb.h lib/vhash.h lib/crypto.h lib/remote.h lib/peersrv.h lib/backend.h \
	lib/digest.h lib/xnet.h lib/xpeer.h lib/xpull.h lib/xrec.h lib/xquorum.h lib/xdecide.h \
	lib/exchange.h lib/curldl.h
PEER_LIBOBJ = lib/ossl.o lib/imb.o lib/vhash.o lib/crypto.o lib/remote.o lib/store_http.o lib/peersrv.o \
	lib/digest.o lib/xnet.o lib/xpeer.o lib/xpull.o lib/xrec.o lib/xquorum.o lib/xdecide.o \
	lib/exchange.o lib/curldl.o
PEER_BIN = spirt-peer
PEER_MAN1 = man/spirt-peer.1
PEER_UNIT = tests/unit/test_crypto tests/unit/test_remote tests/unit/test_digest
PEER_BENCH = bench/xfer_bench bench/hash_bench

lib/crypto.o: lib/crypto.c
	$(CC) $(ALLCFLAGS) $(SODIUM_CFLAGS) -c -o $@ lib/crypto.c

# libIPSec_MB.so.1 is dlopen()ed (lib/imb.h); only its header is needed
lib/imb.o: lib/imb.c
	$(CC) $(ALLCFLAGS) $(SODIUM_CFLAGS) -c -o $@ lib/imb.c
lib/vhash.o: lib/vhash.c
	$(CC) $(ALLCFLAGS) $(SODIUM_CFLAGS) -c -o $@ lib/vhash.c

# libcrypto.so.3 is dlopen()ed (lib/ossl.h); only its header is needed here
lib/ossl.o: lib/ossl.c
	$(CC) $(ALLCFLAGS) $(SSL_CFLAGS) $(SODIUM_CFLAGS) -c -o $@ lib/ossl.c

tests/unit/test_crypto: tests/unit/test_crypto.o lib/libspirt.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ tests/unit/test_crypto.o lib/libspirt.a $(SODIUM_LIBS) $(BASE_LIBS)
tests/unit/test_crypto.o: tests/unit/check.h $(LIBHDR)
tests/unit/test_crypto.o: tests/unit/test_crypto.c
	$(CC) $(ALLCFLAGS) $(SODIUM_CFLAGS) -c -o $@ tests/unit/test_crypto.c

cmd/spirt-peer.o: $(LIBHDR) config.mk
spirt-peer: cmd/spirt-peer.o lib/libspirt.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ cmd/spirt-peer.o lib/libspirt.a $(MHD_LIBS) $(BASE_LIBS)

lib/remote.o: lib/remote.c
	$(CC) $(ALLCFLAGS) $(CURL_CFLAGS) $(SODIUM_CFLAGS) -c -o $@ lib/remote.c

lib/curldl.o: lib/curldl.c
	$(CC) $(ALLCFLAGS) $(CURL_CFLAGS) -c -o $@ lib/curldl.c

lib/store_http.o: lib/store_http.c lib/backend.h
	$(CC) $(ALLCFLAGS) -c -o $@ lib/store_http.c

lib/peersrv.o: lib/peersrv.c
	$(CC) $(ALLCFLAGS) $(MHD_CFLAGS) $(SODIUM_CFLAGS) -c -o $@ lib/peersrv.c

tests/unit/test_remote: tests/unit/test_remote.o lib/libspirt.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ tests/unit/test_remote.o lib/libspirt.a $(MHD_LIBS) $(CURL_LIBS) $(BASE_LIBS)
tests/unit/test_remote.o: tests/unit/check.h $(LIBHDR)
tests/unit/test_remote.o: tests/unit/test_remote.c
	$(CC) $(ALLCFLAGS) $(CURL_CFLAGS) -c -o $@ tests/unit/test_remote.c

tests/unit/test_digest: tests/unit/test_digest.o lib/libspirt.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ tests/unit/test_digest.o lib/libspirt.a $(BASE_LIBS)
tests/unit/test_digest.o: tests/unit/check.h $(LIBHDR)
tests/unit/test_digest.o: tests/unit/test_digest.c
	$(CC) $(ALLCFLAGS) $(SODIUM_CFLAGS) -c -o $@ tests/unit/test_digest.c

bench/xfer_bench: bench/xfer_bench.o lib/libspirt.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ bench/xfer_bench.o lib/libspirt.a $(BASE_LIBS)
bench/xfer_bench.o: $(LIBHDR)
bench/hash_bench: bench/hash_bench.o lib/libspirt.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ bench/hash_bench.o lib/libspirt.a $(BASE_LIBS)
bench/hash_bench.o: $(LIBHDR)
	$(CC) $(ALLCFLAGS) $(SODIUM_CFLAGS) -c -o $@ bench/hash_bench.c
