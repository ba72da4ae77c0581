# mk/faas.mk - spirt-grad under FaaS runners' contracts (included by
# Makefile): -F stdio, -F http (libmicrohttpd), -F lambda (libcurl).
# libmicrohttpd (lib/faas_http.o) and libcurl (lib/curldl.o, mk/peer.mk)
# are dlopen()ed by those modes only (libmicrohttpd.so.12, libcurl.so.4),
# so spirt-grad links neither and a cold start does not load them.
# libjansson (JANSSON_LIBS) it links: every mode reads JSON requests.
FAAS_LIBHDR = lib/faas.h lib/faas_http.h lib/faas_lambda.h
FAAS_LIBOBJ = lib/faas.o lib/faas_http.o lib/faas_lambda.o
FAAS_UNIT = tests/unit/test_faas

lib/faas.o: lib/faas.c
	$(CC) $(ALLCFLAGS) $(JANSSON_CFLAGS) $(SODIUM_CFLAGS) -c -o $@ lib/faas.c
lib/faas_http.o: lib/faas_http.c
	$(CC) $(ALLCFLAGS) $(MHD_CFLAGS) -c -o $@ lib/faas_http.c
lib/faas_lambda.o: lib/faas_lambda.c
	$(CC) $(ALLCFLAGS) $(CURL_CFLAGS) -c -o $@ lib/faas_lambda.c

tests/unit/test_faas: tests/unit/test_faas.o lib/libspirt.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ tests/unit/test_faas.o lib/libspirt.a $(BASE_LIBS) $(JANSSON_LIBS)
tests/unit/test_faas.o: tests/unit/check.h $(LIBHDR)
