# mk/train.mk - spirt-train, its front in C over the training loop in sh,
# the function checker and spirt-run, the supervisor of its warm tools
# (lib/supervise.o) (included by Makefile)
TRAIN_BIN = spirt-train spirt-conform spirt-run
TRAIN_MAN1 = man/spirt-train.1 man/spirt-conform.1 man/spirt-run.1
TRAIN_UNIT = tests/unit/test_supervise
# the evaluation part of spirt-train (--byzantine peer:ATTACK), read by it
# only then, and its training loop, which its front runs: beside it in the
# tree, in $(PREFIX)/libexec/spirt installed
TRAIN_LIBEXEC = spirt-train-byzpeer.sh
TRAIN_LIBEXEC_RUN = spirt-train.sh

# spirt-train is a front, cmd/spirt-train.c (the options, their checks,
# the tools found), that runs spirt-train.sh, the training loop: one POSIX
# sh script, kept in parts a reader can take in one at a time:
# cmd/train/loop.sh (the front's configuration, the peers) and the rest
# of cmd/train/, put together in this order
TRAIN_SH = cmd/train/loop.sh cmd/train/setup.sh \
	cmd/train/rejoin.sh cmd/train/beat.sh cmd/train/exchange.sh \
	cmd/train/run.sh cmd/train/http.sh \
	cmd/train/workers.sh cmd/train/step.sh

# (its checks before the first step, cmd/train/checks.o, read the peers
# file as spirt-peer peers does: cmd/peer/peers.o)
cmd/spirt-train.o cmd/train/checks.o: $(TOOLHDR) $(LIBHDR) cmd/train/checks.h cmd/peer/peers.h config.mk
spirt-train: cmd/spirt-train.o cmd/train/checks.o cmd/peer/peers.o $(TOOLLIB) lib/libspirt.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ cmd/spirt-train.o cmd/train/checks.o cmd/peer/peers.o $(TOOLLIB) lib/libspirt.a $(BASE_LIBS) $(ZLIB_LIBS)

# (made beside, then renamed: sh reads a script as it runs it, and a
# spirt-train running while it is made again would read the new one)
spirt-train.sh: $(TRAIN_SH) config.mk
	cat $(TRAIN_SH) | sed 's/@VERSION@/$(VERSION)/' > $@.tmp
	chmod 755 $@.tmp
	mv -f $@.tmp $@

spirt-train-byzpeer.sh: cmd/train-byz/peer.sh
	cp cmd/train-byz/peer.sh $@

spirt-conform: cmd/spirt-conform.sh config.mk
	sed 's/@VERSION@/$(VERSION)/' cmd/spirt-conform.sh > $@
	chmod 755 $@

cmd/spirt-run.o: $(TOOLHDR) $(LIBHDR) config.mk
spirt-run: cmd/spirt-run.o $(TOOLLIB) lib/libspirt.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ cmd/spirt-run.o $(TOOLLIB) lib/libspirt.a $(BASE_LIBS)

tests/unit/test_supervise: tests/unit/test_supervise.o $(TOOLLIB) lib/libspirt.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ tests/unit/test_supervise.o $(TOOLLIB) lib/libspirt.a $(BASE_LIBS)
tests/unit/test_supervise.o: tests/unit/check.h $(TOOLHDR) $(LIBHDR)
