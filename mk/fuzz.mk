# mk/fuzz.mk - libFuzzer harnesses of every parser (included last by
# Makefile).  `make fuzz` builds them with clang (deps/debian-fuzz: clang
# and its libFuzzer runtime); tests/fuzz/run.sh runs them, .ci/run for 30 s
# each, bench/fuzz.sh for longer.  Not part of `make all` or `make check`.
#
# The library is compiled again for them, into lib/*.fo and
# tests/fuzz/libspirt.a, with the sanitizers, libFuzzer's coverage and
# -DSPIRT_FUZZ: the record reader then skips its checksum comparisons, so
# mutations reach the fields behind the header checksum.  No tool is ever
# built from these objects.
.SUFFIXES: .fo

FUZZ_CC = clang
FUZZ_SAN = -fsanitize=address,undefined -fno-sanitize-recover=all
FUZZ_OPT = -O1 -g -fno-omit-frame-pointer
# no -DSPIRT_WRAP_MALLOC: the sanitizer owns malloc
FUZZ_CFLAGS = -Ilib -Itests/fuzz -D_POSIX_C_SOURCE=200809L \
	-DSPIRT_VERSION_MK=\"$(VERSION)\" -DSPIRT_FUZZ $(INCS) \
	$(SODIUM_CFLAGS) $(JANSSON_CFLAGS) $(CRYPTO_CFLAGS) $(MHD_CFLAGS) $(CURL_CFLAGS) $(SPIRT_CFLAGS) \
	$(FUZZ_OPT) $(FUZZ_SAN)
FUZZ_LIBS = $(LMDB_LIBS) $(XXHASH_LIBS) $(SODIUM_LIBS) $(CRYPTO_LIBS) \
	$(ZLIB_LIBS) $(DL_LIBS) -lm
FUZZ_LIBOBJ = $(LIBOBJ:.o=.fo)
FUZZ_HDR = tests/fuzz/fuzz.h tests/fuzz/fuzz_data.h tests/fuzz/fuzz_crypto.h
# the harnesses use memfd_create(), F_SETPIPE_SZ: Linux
FUZZ_LINK = $(FUZZ_CC) $(FUZZ_CFLAGS) -D_GNU_SOURCE -fsanitize=fuzzer

FUZZ_BIN = tests/fuzz/fuzz_record tests/fuzz/fuzz_idx tests/fuzz/fuzz_csv \
	tests/fuzz/fuzz_libsvm tests/fuzz/fuzz_npy tests/fuzz/fuzz_serve \
	tests/fuzz/fuzz_faas tests/fuzz/fuzz_storekey tests/fuzz/fuzz_hs \
	tests/fuzz/fuzz_msg tests/fuzz/fuzz_token tests/fuzz/fuzz_keyfile \
	tests/fuzz/fuzz_allow tests/fuzz/fuzz_digest tests/fuzz/fuzz_peersrv \
	tests/fuzz/fuzz_parse tests/fuzz/fuzz_remote tests/fuzz/fuzz_assign \
	tests/fuzz/fuzz_beat tests/fuzz/fuzz_npz tests/fuzz/fuzz_round \
	tests/fuzz/fuzz_xpart tests/fuzz/fuzz_slot

.c.fo:
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c -o $@ $<

$(FUZZ_LIBOBJ): $(LIBHDR) config.mk mk/fuzz.mk

tests/fuzz/libspirt.a: $(FUZZ_LIBOBJ)
	rm -f $@
	$(AR) $(ARFLAGS) $@ $(FUZZ_LIBOBJ)

fuzz: $(FUZZ_BIN)

# one link line per harness
tests/fuzz/fuzz_record: tests/fuzz/fuzz_record.c $(FUZZ_HDR) tests/fuzz/libspirt.a
	$(FUZZ_LINK) -o $@ tests/fuzz/fuzz_record.c tests/fuzz/libspirt.a $(FUZZ_LIBS)
tests/fuzz/fuzz_idx: tests/fuzz/fuzz_idx.c $(FUZZ_HDR) tests/fuzz/libspirt.a
	$(FUZZ_LINK) -o $@ tests/fuzz/fuzz_idx.c tests/fuzz/libspirt.a $(FUZZ_LIBS)
tests/fuzz/fuzz_csv: tests/fuzz/fuzz_csv.c $(FUZZ_HDR) tests/fuzz/libspirt.a
	$(FUZZ_LINK) -o $@ tests/fuzz/fuzz_csv.c tests/fuzz/libspirt.a $(FUZZ_LIBS)
tests/fuzz/fuzz_npz: tests/fuzz/fuzz_npz.c $(FUZZ_HDR) tests/fuzz/libspirt.a
	$(FUZZ_LINK) -o $@ tests/fuzz/fuzz_npz.c tests/fuzz/libspirt.a $(FUZZ_LIBS)
tests/fuzz/fuzz_libsvm: tests/fuzz/fuzz_libsvm.c $(FUZZ_HDR) tests/fuzz/libspirt.a
	$(FUZZ_LINK) -o $@ tests/fuzz/fuzz_libsvm.c tests/fuzz/libspirt.a $(FUZZ_LIBS)
tests/fuzz/fuzz_npy: tests/fuzz/fuzz_npy.c $(FUZZ_HDR) tests/fuzz/libspirt.a
	$(FUZZ_LINK) -o $@ tests/fuzz/fuzz_npy.c tests/fuzz/libspirt.a $(FUZZ_LIBS)
tests/fuzz/fuzz_serve: tests/fuzz/fuzz_serve.c $(FUZZ_HDR) tests/fuzz/libspirt.a
	$(FUZZ_LINK) -o $@ tests/fuzz/fuzz_serve.c tests/fuzz/libspirt.a $(FUZZ_LIBS)
tests/fuzz/fuzz_faas: tests/fuzz/fuzz_faas.c $(FUZZ_HDR) tests/fuzz/libspirt.a
	$(FUZZ_LINK) -o $@ tests/fuzz/fuzz_faas.c tests/fuzz/libspirt.a $(FUZZ_LIBS) \
	    $(JANSSON_LIBS)
tests/fuzz/fuzz_storekey: tests/fuzz/fuzz_storekey.c $(FUZZ_HDR) tests/fuzz/libspirt.a
	$(FUZZ_LINK) -o $@ tests/fuzz/fuzz_storekey.c tests/fuzz/libspirt.a $(FUZZ_LIBS)
tests/fuzz/fuzz_hs: tests/fuzz/fuzz_hs.c $(FUZZ_HDR) tests/fuzz/libspirt.a
	$(FUZZ_LINK) -o $@ tests/fuzz/fuzz_hs.c tests/fuzz/libspirt.a $(FUZZ_LIBS)
tests/fuzz/fuzz_msg: tests/fuzz/fuzz_msg.c $(FUZZ_HDR) tests/fuzz/libspirt.a
	$(FUZZ_LINK) -o $@ tests/fuzz/fuzz_msg.c tests/fuzz/libspirt.a $(FUZZ_LIBS)
tests/fuzz/fuzz_token: tests/fuzz/fuzz_token.c $(FUZZ_HDR) tests/fuzz/libspirt.a
	$(FUZZ_LINK) -o $@ tests/fuzz/fuzz_token.c tests/fuzz/libspirt.a $(FUZZ_LIBS)
tests/fuzz/fuzz_keyfile: tests/fuzz/fuzz_keyfile.c $(FUZZ_HDR) tests/fuzz/libspirt.a
	$(FUZZ_LINK) -o $@ tests/fuzz/fuzz_keyfile.c tests/fuzz/libspirt.a $(FUZZ_LIBS)
tests/fuzz/fuzz_allow: tests/fuzz/fuzz_allow.c $(FUZZ_HDR) tests/fuzz/libspirt.a
	$(FUZZ_LINK) -o $@ tests/fuzz/fuzz_allow.c tests/fuzz/libspirt.a $(FUZZ_LIBS)
tests/fuzz/fuzz_digest: tests/fuzz/fuzz_digest.c $(FUZZ_HDR) tests/fuzz/libspirt.a
	$(FUZZ_LINK) -o $@ tests/fuzz/fuzz_digest.c tests/fuzz/libspirt.a $(FUZZ_LIBS)
tests/fuzz/fuzz_slot: tests/fuzz/fuzz_slot.c $(FUZZ_HDR) tests/fuzz/libspirt.a
	$(FUZZ_LINK) -o $@ tests/fuzz/fuzz_slot.c tests/fuzz/libspirt.a $(FUZZ_LIBS)
tests/fuzz/fuzz_xpart: tests/fuzz/fuzz_xpart.c $(FUZZ_HDR) tests/fuzz/libspirt.a
	$(FUZZ_LINK) -o $@ tests/fuzz/fuzz_xpart.c tests/fuzz/libspirt.a $(FUZZ_LIBS)
tests/fuzz/fuzz_parse: tests/fuzz/fuzz_parse.c $(FUZZ_HDR) tests/fuzz/libspirt.a
	$(FUZZ_LINK) -o $@ tests/fuzz/fuzz_parse.c tests/fuzz/libspirt.a $(FUZZ_LIBS)
tests/fuzz/fuzz_assign: tests/fuzz/fuzz_assign.c $(FUZZ_HDR) tests/fuzz/libspirt.a
	$(FUZZ_LINK) -o $@ tests/fuzz/fuzz_assign.c tests/fuzz/libspirt.a $(FUZZ_LIBS)
tests/fuzz/fuzz_beat: tests/fuzz/fuzz_beat.c $(FUZZ_HDR) tests/fuzz/libspirt.a
	$(FUZZ_LINK) -o $@ tests/fuzz/fuzz_beat.c tests/fuzz/libspirt.a $(FUZZ_LIBS)
tests/fuzz/fuzz_round: tests/fuzz/fuzz_round.c $(FUZZ_HDR) tests/fuzz/libspirt.a
	$(FUZZ_LINK) -o $@ tests/fuzz/fuzz_round.c tests/fuzz/libspirt.a $(FUZZ_LIBS)
# the client, over a libcurl played by the harness (its spirt_curl_load)
tests/fuzz/fuzz_remote: tests/fuzz/fuzz_remote.c $(FUZZ_HDR) tests/fuzz/libspirt.a
	$(FUZZ_LINK) -o $@ tests/fuzz/fuzz_remote.c tests/fuzz/libspirt.a $(FUZZ_LIBS)
# the server's handler, driven without a socket: tests/fuzz/mhd_stub.c
# stands in for libmicrohttpd
tests/fuzz/fuzz_peersrv: tests/fuzz/fuzz_peersrv.c tests/fuzz/mhd_stub.c $(FUZZ_HDR) tests/fuzz/libspirt.a
	$(FUZZ_LINK) -o $@ tests/fuzz/fuzz_peersrv.c tests/fuzz/mhd_stub.c tests/fuzz/libspirt.a $(FUZZ_LIBS)

fuzz-clean:
	rm -f $(FUZZ_LIBOBJ) tests/fuzz/libspirt.a $(FUZZ_BIN)

.PHONY: fuzz fuzz-clean
