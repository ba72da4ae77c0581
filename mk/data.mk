# mk/data.mk - build fragment for the data tools (included by Makefile)
DATA_LIBHDR = lib/data.h lib/datain.h lib/assign.h lib/batch.h lib/shard.h
DATA_LIBOBJ = lib/data.o lib/idx.o lib/npz.o lib/assign.o lib/batch.o \
	lib/shard.o
DATA_BIN = spirt-shard
DATA_MAN1 = man/spirt-shard.1
DATA_MAN5 =
DATA_UNIT = tests/unit/test_data tests/unit/test_assign
DATA_BENCH =




cmd/spirt-shard.o: $(TOOLHDR) $(LIBHDR) config.mk
spirt-shard: cmd/spirt-shard.o $(TOOLLIB) lib/libspirt.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ cmd/spirt-shard.o $(TOOLLIB) lib/libspirt.a $(BASE_LIBS) $(ZLIB_LIBS)

tests/unit/test_data.o: tests/unit/check.h $(LIBHDR)
tests/unit/test_data: tests/unit/test_data.o lib/libspirt.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ tests/unit/test_data.o lib/libspirt.a $(BASE_LIBS) $(ZLIB_LIBS)

tests/unit/test_assign.o: tests/unit/check.h $(LIBHDR)
tests/unit/test_assign: tests/unit/test_assign.o lib/libspirt.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ tests/unit/test_assign.o lib/libspirt.a $(BASE_LIBS) $(ZLIB_LIBS)
