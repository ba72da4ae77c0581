# mk/beat.mk - build fragment for spirt-beat (included by Makefile):
# heartbeats (lib/beat.o) and the quorum of a step (lib/quorum.o, used by
# lib/exchange.o)
BEAT_LIBHDR = lib/beat.h lib/quorum.h
BEAT_LIBOBJ = lib/beat.o lib/quorum.o
BEAT_BIN = spirt-beat
BEAT_MAN1 = man/spirt-beat.1
BEAT_UNIT = tests/unit/test_beat tests/unit/test_quorum

tests/unit/test_beat: tests/unit/test_beat.o lib/libspirt.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ tests/unit/test_beat.o lib/libspirt.a $(BASE_LIBS)
tests/unit/test_quorum: tests/unit/test_quorum.o lib/libspirt.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ tests/unit/test_quorum.o lib/libspirt.a $(BASE_LIBS)
tests/unit/test_beat.o tests/unit/test_quorum.o: tests/unit/check.h $(LIBHDR)

cmd/spirt-beat.o: $(TOOLHDR) $(LIBHDR) config.mk
spirt-beat: cmd/spirt-beat.o $(TOOLLIB) lib/libspirt.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ cmd/spirt-beat.o $(TOOLLIB) lib/libspirt.a $(BASE_LIBS)
