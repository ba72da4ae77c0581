# mk/invoke.mk - spirt-invoke, a function behind a FaaS gateway (included
# by Makefile).  libcurl is dlopen()ed (lib/curldl.o, mk/peer.mk), as for
# the other clients; libjansson reads the gateway's JSON answers.
INVOKE_BIN = spirt-invoke
INVOKE_MAN1 = man/spirt-invoke.1
INVOKE_LIBHDR = lib/invoke.h
INVOKE_LIBOBJ = lib/invoke.o

lib/invoke.o: lib/invoke.c
	$(CC) $(ALLCFLAGS) $(CURL_CFLAGS) $(JANSSON_CFLAGS) -c -o $@ lib/invoke.c

spirt-invoke: cmd/spirt-invoke.o $(TOOLLIB) lib/libspirt.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ cmd/spirt-invoke.o $(TOOLLIB) lib/libspirt.a $(BASE_LIBS) $(JANSSON_LIBS)
cmd/spirt-invoke.o: $(TOOLHDR) $(LIBHDR) config.mk

INVOKE_UNIT = tests/unit/test_invoke
tests/unit/test_invoke: tests/unit/test_invoke.o lib/libspirt.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ tests/unit/test_invoke.o lib/libspirt.a $(BASE_LIBS) $(JANSSON_LIBS)
tests/unit/test_invoke.o: tests/unit/check.h $(LIBHDR)
