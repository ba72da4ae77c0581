# mk/faas.mk - spirt-grad under FaaS runners' contracts (included by
# Makefile): -F stdio, -F http (libmicrohttpd), -F lambda (libcurl).
# Only spirt-grad links FAAS_LIBS; lib/faas_http.o and lib/faas_lambda.o
# are the only objects that include the libraries' headers.
FAAS_LIBHDR = lib/faas.h lib/faas_http.h lib/faas_lambda.h
FAAS_LIBOBJ = lib/faas.o lib/faas_http.o lib/faas_lambda.o
FAAS_LIBS = $(MHD_LIBS) $(CURL_LIBS)
FAAS_UNIT = tests/unit/test_faas

lib/faas_http.o: lib/faas_http.c
	$(CC) $(ALLCFLAGS) $(MHD_CFLAGS) -c -o $@ lib/faas_http.c
lib/faas_lambda.o: lib/faas_lambda.c
	$(CC) $(ALLCFLAGS) $(CURL_CFLAGS) -c -o $@ lib/faas_lambda.c

tests/unit/test_faas: tests/unit/test_faas.o lib/libspirt.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ tests/unit/test_faas.o lib/libspirt.a $(BASE_LIBS)
tests/unit/test_faas.o: tests/unit/check.h $(LIBHDR)
