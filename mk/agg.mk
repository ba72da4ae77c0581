# mk/agg.mk - build fragment for the agg tools (included by Makefile)
AGG_LIBHDR = lib/vec.h lib/agg.h lib/optim.h lib/serve.h lib/aggstore.h lib/update.h \
	lib/slot.h lib/attack.h
AGG_LIBOBJ = lib/agg.o lib/optim.o lib/serve.o lib/aggstore.o lib/update.o \
	lib/slot.o lib/attack.o
AGG_BIN = spirt-agg spirt-update spirt-attack
AGG_MAN1 = man/spirt-agg.1 man/spirt-update.1 man/spirt-attack.1
AGG_MAN5 =
AGG_UNIT = tests/unit/test_agg tests/unit/test_optim tests/unit/test_serve \
	tests/unit/test_slot
AGG_BENCH = bench/agg_bench

# sqrt in the Adam kernel vectorises only without errno (a semantics flag,
# not an optimisation level: it leaves the user's CFLAGS alone)
AGG_MATHFLAGS = -fno-math-errno
lib/optim.o: lib/optim.c
	$(CC) $(ALLCFLAGS) $(AGG_MATHFLAGS) -c -o $@ lib/optim.c

tests/unit/test_agg: tests/unit/test_agg.o lib/libspirt.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ tests/unit/test_agg.o lib/libspirt.a $(BASE_LIBS)
tests/unit/test_optim: tests/unit/test_optim.o lib/libspirt.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ tests/unit/test_optim.o lib/libspirt.a $(BASE_LIBS)
tests/unit/test_serve: tests/unit/test_serve.o lib/libspirt.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ tests/unit/test_serve.o lib/libspirt.a $(BASE_LIBS)
tests/unit/test_slot: tests/unit/test_slot.o lib/libspirt.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ tests/unit/test_slot.o lib/libspirt.a $(BASE_LIBS)
tests/unit/test_agg.o tests/unit/test_optim.o tests/unit/test_serve.o \
tests/unit/test_slot.o: \
	tests/unit/check.h $(LIBHDR)

cmd/spirt-agg.o cmd/spirt-update.o cmd/spirt-attack.o: $(TOOLHDR) $(LIBHDR) config.mk
spirt-agg: cmd/spirt-agg.o $(TOOLLIB) lib/libspirt.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ cmd/spirt-agg.o $(TOOLLIB) lib/libspirt.a $(BASE_LIBS)
spirt-update: cmd/spirt-update.o $(TOOLLIB) lib/libspirt.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ cmd/spirt-update.o $(TOOLLIB) lib/libspirt.a $(BASE_LIBS)
spirt-attack: cmd/spirt-attack.o $(TOOLLIB) lib/libspirt.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ cmd/spirt-attack.o $(TOOLLIB) lib/libspirt.a $(BASE_LIBS)

# benchmark (not part of check): sh bench/agg.sh
bench/agg_bench: bench/agg_bench.o lib/libspirt.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ bench/agg_bench.o lib/libspirt.a $(BASE_LIBS)
bench/agg_bench.o: $(LIBHDR)
