# spirt - serverless peer-to-peer training tools
# See LICENSE file for copyright and license details.
.POSIX:
.SUFFIXES:
.SUFFIXES: .c .o

include config.mk

# the default target, before the fragments can define a rule
all:

# the header and object lists come before the fragments: a fragment's
# prerequisite line `x.o: $(LIBHDR)` is expanded where it is read
ALLCFLAGS = $(SPIRT_CPPFLAGS) $(CPPFLAGS) $(INCS) $(SPIRT_CFLAGS) $(CFLAGS)

CORE_LIBHDR = lib/spirt.h lib/tensor.h lib/store.h lib/io.h lib/parse.h \
	lib/npy.h lib/rng.h lib/mem.h lib/isa.h lib/le.h lib/keys.h \
	lib/dl.h lib/supervise.h lib/kv.h
LIBHDR = $(CORE_LIBHDR) $(DATA_LIBHDR) $(MODEL_LIBHDR) $(AGG_LIBHDR) \
	$(PEER_LIBHDR) $(FAAS_LIBHDR) $(INVOKE_LIBHDR) $(BEAT_LIBHDR)
LIBOBJ = lib/spirt.o lib/tensor.o lib/keys.o lib/store.o lib/io.o \
	lib/parse.o lib/npy.o lib/mem.o lib/isa.o lib/dl.o \
	lib/supervise.o lib/kv.o \
	$(DATA_LIBOBJ) \
	$(MODEL_LIBOBJ) $(AGG_LIBOBJ) $(PEER_LIBOBJ) $(FAAS_LIBOBJ) \
	$(INVOKE_LIBOBJ) $(BEAT_LIBOBJ)

# the tools' own layer (cmd/tool.h): messages, exits, option and
# environment resolution, signal handlers; linked into every tool, never
# part of the library
TOOLHDR = cmd/tool.h cmd/opt.h
TOOLOBJ = cmd/tool.o cmd/toolblas.o cmd/opt.o
TOOLLIB = cmd/libtool.a

include mk/data.mk
include mk/model.mk
include mk/agg.mk
include mk/train.mk
include mk/peer.mk
include mk/faas.mk
include mk/invoke.mk
include mk/beat.mk
include mk/torch.mk

BIN = spirt-store $(DATA_BIN) $(MODEL_BIN) $(AGG_BIN) $(TRAIN_BIN) $(PEER_BIN) \
	$(INVOKE_BIN) $(BEAT_BIN) $(TORCH_BIN)
MAN1 = man/spirt-store.1 $(DATA_MAN1) $(MODEL_MAN1) $(AGG_MAN1) \
	$(TRAIN_MAN1) $(PEER_MAN1) $(INVOKE_MAN1) $(BEAT_MAN1) $(TORCH_MAN1)
MAN5 = man/spirt-tensor.5 man/spirt-store.5 $(DATA_MAN5) $(MODEL_MAN5) \
	$(AGG_MAN5)
MAN7 = man/spirt.7 man/spirt-function.7
UNIT = tests/unit/test_tensor tests/unit/test_store tests/unit/test_parse \
	tests/unit/test_keys tests/unit/test_npy tests/unit/test_mem \
	tests/unit/test_opt tests/unit/test_kv \
	$(DATA_UNIT) $(MODEL_UNIT) $(AGG_UNIT) $(PEER_UNIT) $(FAAS_UNIT) \
	$(INVOKE_UNIT) $(BEAT_UNIT) $(TRAIN_UNIT)
BENCH = bench/store_bench $(DATA_BENCH) $(MODEL_BENCH) $(AGG_BENCH) \
	$(PEER_BENCH)

# no $(CURL_LIBS): libcurl is dlopen()ed by lib/curldl.c (mk/peer.mk);
# $(CRYPTO_LIBS): every tool reaches a URL store's sealed messages
BASE_LIBS = $(WRAP_LDFLAGS) $(LMDB_LIBS) $(XXHASH_LIBS) $(SODIUM_LIBS) \
	$(CRYPTO_LIBS) $(DL_LIBS) -lm

# read by a tool, not run (spirt-train's evaluation part), and run by a
# tool, not by hand (spirt-train's training loop): $(PREFIX)/libexec
LIBEXEC = $(TRAIN_LIBEXEC)
LIBEXEC_RUN = $(TRAIN_LIBEXEC_RUN)

# test infrastructure, built with the tools, never installed: the link
# emulator of tests/netns.bash where the kernel has no netem
TESTBIN = tests/wire

all: $(BIN) $(LIBEXEC) $(LIBEXEC_RUN) $(TESTBIN)

.c.o:
	$(CC) $(ALLCFLAGS) -c -o $@ $<

$(LIBOBJ): $(LIBHDR) config.mk
cmd/spirt-store.o: $(TOOLHDR) $(LIBHDR) config.mk
# (again here: mk/model.mk's line is read before the agg and faas lists,
# and spirt-grad includes serve.h and faas*.h; a stale object crashed)
cmd/spirt-grad.o: $(TOOLHDR) $(LIBHDR)

lib/libspirt.a: $(LIBOBJ)
	rm -f $@
	$(AR) $(ARFLAGS) $@ $(LIBOBJ)

$(TOOLOBJ): $(TOOLHDR) $(LIBHDR) config.mk
$(TOOLLIB): $(TOOLOBJ)
	rm -f $@
	$(AR) $(ARFLAGS) $@ $(TOOLOBJ)

# one link line per tool, as LMDB does
spirt-store: cmd/spirt-store.o $(TOOLLIB) lib/libspirt.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ cmd/spirt-store.o $(TOOLLIB) lib/libspirt.a $(BASE_LIBS)

# unit tests
tests/unit/test_tensor: tests/unit/test_tensor.o lib/libspirt.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ tests/unit/test_tensor.o lib/libspirt.a $(BASE_LIBS)
tests/unit/test_store: tests/unit/test_store.o lib/libspirt.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ tests/unit/test_store.o lib/libspirt.a $(BASE_LIBS)
tests/unit/test_parse: tests/unit/test_parse.o lib/libspirt.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ tests/unit/test_parse.o lib/libspirt.a $(BASE_LIBS)
tests/unit/test_npy: tests/unit/test_npy.o lib/libspirt.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ tests/unit/test_npy.o lib/libspirt.a $(BASE_LIBS)
tests/unit/test_mem: tests/unit/test_mem.o lib/libspirt.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ tests/unit/test_mem.o lib/libspirt.a $(BASE_LIBS)
tests/unit/test_keys: tests/unit/test_keys.o lib/libspirt.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ tests/unit/test_keys.o lib/libspirt.a $(BASE_LIBS)
tests/unit/test_kv: tests/unit/test_kv.o lib/libspirt.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ tests/unit/test_kv.o lib/libspirt.a $(BASE_LIBS)
tests/unit/test_opt: tests/unit/test_opt.o $(TOOLLIB) lib/libspirt.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ tests/unit/test_opt.o $(TOOLLIB) lib/libspirt.a $(BASE_LIBS)
tests/unit/test_tensor.o tests/unit/test_store.o tests/unit/test_parse.o \
tests/unit/test_npy.o tests/unit/test_mem.o tests/unit/test_keys.o \
tests/unit/test_opt.o tests/unit/test_kv.o: \
	tests/unit/check.h $(LIBHDR) $(TOOLHDR)

# benchmarks (not part of check): make bench
bench/store_bench: bench/store_bench.o $(TOOLLIB) lib/libspirt.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ bench/store_bench.o $(TOOLLIB) lib/libspirt.a $(BASE_LIBS)
bench/store_bench.o: $(TOOLHDR) $(LIBHDR)

tests/wire: tests/wire.o
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ tests/wire.o

# the Debian packages (deps/debian); `sh ./bootstrap check` installs them and
# then runs `make check`, so check itself does not run bootstrap again
deps:
	sh ./bootstrap

check:
	$(MAKE) all $(UNIT)
	SPIRT_CHECK_CFLAGS='$(CFLAGS)' sh tests/run $(UNIT)

test: check

# the main job: train the MLP on Fashion-MNIST (resumes if interrupted)
DEMOFLAGS =
demo: all
	mkdir -p demo
	PATH="`pwd`:$$PATH" ./spirt-train -s demo/spirt.db $(DEMOFLAGS)

lint:
	mandoc -Tlint -W warning $(MAN1) $(MAN5) $(MAN7)

bench: all $(BENCH)
	sh ./bootstrap --bench
	sh bench/run

install: all
	mkdir -p $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(MANPREFIX)/man1 \
		$(DESTDIR)$(MANPREFIX)/man5 $(DESTDIR)$(MANPREFIX)/man7
	cp -f $(BIN) $(DESTDIR)$(PREFIX)/bin
	cd $(DESTDIR)$(PREFIX)/bin && chmod 755 $(BIN)
	mkdir -p $(DESTDIR)$(PREFIX)/libexec/spirt
	cp -f $(LIBEXEC) $(LIBEXEC_RUN) $(DESTDIR)$(PREFIX)/libexec/spirt
	cd $(DESTDIR)$(PREFIX)/libexec/spirt && chmod 644 $(LIBEXEC) && \
		chmod 755 $(LIBEXEC_RUN)
	cp -f $(MAN1) $(DESTDIR)$(MANPREFIX)/man1
	cp -f $(MAN5) $(DESTDIR)$(MANPREFIX)/man5
	cp -f $(MAN7) $(DESTDIR)$(MANPREFIX)/man7
	mkdir -p $(DESTDIR)$(COMPDIR)
	for t in $(BIN); do \
		cp -f contrib/completion/spirt.bash $(DESTDIR)$(COMPDIR)/$$t; \
	done
	d=$(DESTDIR)$(PYTHONDIR)/spirt && mkdir -p $$d && \
		cp -f $(PYFILES) $$d && cd $$d && chmod 644 *.py

uninstall:
	cd $(DESTDIR)$(PREFIX)/bin && rm -f $(BIN)
	cd $(DESTDIR)$(PREFIX)/libexec/spirt && rm -f $(LIBEXEC) $(LIBEXEC_RUN)
	rmdir $(DESTDIR)$(PREFIX)/libexec/spirt 2>/dev/null || :
	cd $(DESTDIR)$(COMPDIR) && rm -f $(BIN)
	for m in $(MAN1) $(MAN5) $(MAN7); do \
		s=$${m##*.}; rm -f $(DESTDIR)$(MANPREFIX)/man$$s/$${m#man/}; \
	done
	d=$(DESTDIR)$(PYTHONDIR)/spirt && for f in $(PYFILES); do \
		rm -f $$d/$${f##*/}; done && rm -rf $$d/__pycache__ && \
		{ rmdir $$d 2>/dev/null || :; }

clean:
	rm -f $(BIN) $(LIBEXEC) $(LIBEXEC_RUN) lib/libspirt.a $(LIBOBJ) $(TOOLLIB) cmd/*.o cmd/key/*.o cmd/peer/*.o cmd/train/*.o tests/unit/*.o $(UNIT) \
		bench/*.o $(BENCH) $(FUZZ_LIBOBJ) tests/fuzz/libspirt.a \
		$(FUZZ_BIN) $(TESTBIN) tests/wire.o

dist: clean
	mkdir -p spirt-$(VERSION)
	cp -R LICENSE Makefile README.md config.mk bootstrap deps docs mk cmd lib \
		man python tests examples contrib bench spirt-$(VERSION)
	tar -cf - spirt-$(VERSION) | gzip > spirt-$(VERSION).tar.gz
	rm -rf spirt-$(VERSION)

.PHONY: all deps check test demo lint bench install uninstall clean dist

# last: it builds the library's objects again (make fuzz)
include mk/fuzz.mk
