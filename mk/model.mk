# mk/model.mk - build fragment for the model tools (included by Makefile)
# OpenBLAS is dlopen()ed by lib/blas.c (spirt-grad(1) says why), so the
# tools link libdl (config.mk's DL_LIBS, in BASE_LIBS), not BLAS_LIBS.
MODEL_LIBHDR = lib/blas.h lib/layers.h lib/model.h lib/grad.h lib/gradctx.h \
	lib/eval.h
MODEL_LIBOBJ = lib/blas.o lib/conv.o lib/layers.o lib/model.o lib/grad.o lib/eval.o
MODEL_BIN = spirt-init spirt-grad spirt-eval
MODEL_MAN1 = man/spirt-init.1 man/spirt-grad.1 man/spirt-eval.1
MODEL_MAN5 = man/spirt-model.5
MODEL_UNIT = tests/unit/test_blas tests/unit/test_layers tests/unit/test_model \
	tests/unit/test_grad
MODEL_BENCH = bench/grad_bench bench/layers_bench

spirt-init: cmd/spirt-init.o $(TOOLLIB) lib/libspirt.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ cmd/spirt-init.o $(TOOLLIB) lib/libspirt.a $(BASE_LIBS)
spirt-grad: cmd/spirt-grad.o $(TOOLLIB) lib/libspirt.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ cmd/spirt-grad.o $(TOOLLIB) lib/libspirt.a $(BASE_LIBS) $(DL_LIBS) \
	    $(JANSSON_LIBS)
spirt-eval: cmd/spirt-eval.o $(TOOLLIB) lib/libspirt.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ cmd/spirt-eval.o $(TOOLLIB) lib/libspirt.a $(BASE_LIBS) $(DL_LIBS)
cmd/spirt-init.o cmd/spirt-grad.o cmd/spirt-eval.o: $(TOOLHDR) $(LIBHDR) config.mk

tests/unit/test_blas: tests/unit/test_blas.o $(TOOLLIB) lib/libspirt.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ tests/unit/test_blas.o $(TOOLLIB) lib/libspirt.a $(BASE_LIBS) $(DL_LIBS)
tests/unit/test_layers: tests/unit/test_layers.o $(TOOLLIB) lib/libspirt.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ tests/unit/test_layers.o $(TOOLLIB) lib/libspirt.a $(BASE_LIBS) $(DL_LIBS)
tests/unit/test_model: tests/unit/test_model.o $(TOOLLIB) lib/libspirt.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ tests/unit/test_model.o $(TOOLLIB) lib/libspirt.a $(BASE_LIBS) $(DL_LIBS)
tests/unit/test_grad: tests/unit/test_grad.o lib/libspirt.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ tests/unit/test_grad.o lib/libspirt.a $(BASE_LIBS) $(DL_LIBS)
tests/unit/test_blas.o tests/unit/test_layers.o tests/unit/test_model.o \
tests/unit/test_grad.o: \
    tests/unit/check.h $(TOOLHDR) $(LIBHDR)

bench/grad_bench: bench/grad_bench.o $(TOOLLIB) lib/libspirt.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ bench/grad_bench.o $(TOOLLIB) lib/libspirt.a $(BASE_LIBS) $(DL_LIBS)
bench/grad_bench.o: $(TOOLHDR) $(LIBHDR) bench/bench.h
bench/layers_bench: bench/layers_bench.o $(TOOLLIB) lib/libspirt.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ bench/layers_bench.o $(TOOLLIB) lib/libspirt.a $(BASE_LIBS) $(DL_LIBS)
bench/layers_bench.o: $(TOOLHDR) $(LIBHDR) bench/bench.h
