/* grad_bench.c - forward+backward time per minibatch, and sgemm alone */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "parse.h"
#include "blas.h"
#include "model.h"
#include "tool.h"
#include "bench.h"

static double
median(double *t, int n)
{
	qsort(t, (size_t)n, sizeof *t, cmpd);
	return t[n / 2];
}

/* sgemm calls of one dense step (forward, dweight, dinp), timed alone */
static double
gemm_only(const struct spirt_model *m, size_t B, float *A, float *Bm,
    float *C)
{
	double t0 = now();
	int i;

	for (i = 0; i < m->nlayers; i++) {
		size_t in = m->layer[i].in, out = m->layer[i].out;
		spirt_sgemm(0, 1, B, out, in, 1, A, in, Bm, in, 1, C, out);
		spirt_sgemm(1, 0, out, in, B, 1, A, out, Bm, in, 0, C, in);
		if (i > 0)
			spirt_sgemm(0, 0, B, in, out, 1, A, out, Bm, in, 0, C,
			    in);
	}
	return now() - t0;
}

static void
bench(const char *spec, size_t B, int reps)
{
	struct spirt_model m;
	struct spirt_ws *ws;
	struct spirt_sm64 r;
	float *p, *g, *x, *A, *Bm, *C;
	int32_t *y;
	double *t, *tg, *tc, flops, ms, gms, cms;
	size_t i, big = 0;
	int k;

	if (spirt_model_parse(&m, spec) != 0 ||
	    spirt_ws_new(&ws, &m, B, SPIRT_WS_TRAIN) != 0) {
		fprintf(stderr, "grad_bench: %s: cannot set up\n", spec);
		exit(70);
	}
	p = malloc(m.nparams * 4);
	g = malloc(m.nparams * 4);
	t = malloc((size_t)reps * sizeof *t);
	tg = malloc((size_t)reps * sizeof *tg);
	tc = malloc((size_t)reps * sizeof *tc);
	spirt_model_init(&m, p, 1);
	spirt_sm64_seed(&r, 2);
	x = spirt_ws_input(ws);
	y = spirt_ws_labels(ws);
	for (i = 0; i < B * m.nin; i++)
		x[i] = (float)spirt_sm64_uniform(&r);
	for (i = 0; i < B; i++)
		y[i] = (int32_t)spirt_sm64_below(&r, m.nclass);
	for (k = 0; k < 5; k++) {                       // warm up
		spirt_model_forward(ws, &m, p, B);
		spirt_model_backward(ws, &m, p, g, B);
	}
	for (k = 0; k < reps; k++) {
		double t0 = now(), c0 = cpu();
		spirt_model_forward(ws, &m, p, B);
		spirt_model_backward(ws, &m, p, g, B);
		t[k] = now() - t0;
		tc[k] = cpu() - c0;
	}
	ms = 1e3 * median(t, reps);
	cms = 1e3 * median(tc, reps);
	// forward + dweight + dinput (not for the first layer) ~ 3x forward
	flops = 0;
	for (k = 0; k < m.nlayers; k++) {
		const struct spirt_layer *l = &m.layer[k];
		double f = l->kind == SPIRT_LAYER_CONV ? 2.0 * (double)(l->OC *
		    l->OH * l->OW * l->C * l->k * l->k) : 2.0 * (double)(l->in *
		    l->out);
		flops += (k == 0 ? 2 : 3) * f * (double)B;
	}
	if (m.kind == SPIRT_NET)        // layer lists: ~3x the forward's
		flops = 3.0 * (double)m.flops * (double)B;
	printf("spirt %s batch=%zu fwdbwd_ms=%.4f cpu_ms=%.4f gflops=%.2f",
	    spec, B, ms, cms, flops / (ms * 1e6));
	if (m.kind == SPIRT_MLP || m.kind == SPIRT_SOFTMAX) {
		for (k = 0; k < m.nlayers; k++) {
			size_t s = (m.layer[k].in + B) * m.layer[k].out +
			    B * m.layer[k].in;
			if (s > big)
				big = s;
		}
		A = calloc(big, 4);
		Bm = calloc(big, 4);
		C = calloc(big, 4);
		for (k = 0; k < 5; k++)
			gemm_only(&m, B, A, Bm, C);
		for (k = 0; k < reps; k++)
			tg[k] = gemm_only(&m, B, A, Bm, C);
		gms = 1e3 * median(tg, reps);
		printf(" sgemm_ms=%.4f sgemm_gflops=%.2f", gms,
		    flops / (gms * 1e6));
		free(A), free(Bm), free(C);
	}
	printf("\n");
	spirt_ws_free(ws);
	free(p), free(g), free(t), free(tg), free(tc);
}

/* "--exec N cmd ...": median wall time of N whole runs of cmd */
static int
exec_bench(int n, char **cmd)
{
	double *t = malloc((size_t)n * sizeof *t);
	int i, st;
	pid_t pid;

	for (i = 0; i < n; i++) {
		double t0 = now();
		if ((pid = fork()) == 0) {
			execvp(cmd[0], cmd);
			_exit(127);
		}
		if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) ||
		    WEXITSTATUS(st) != 0) {
			fprintf(stderr, "grad_bench: %s failed\n", cmd[0]);
			return 1;
		}
		t[i] = now() - t0;
	}
	printf("exec_ms=%.3f\n", 1e3 * median(t, n));
	free(t);
	return 0;
}

/*
 * "--rss cmd ...": cmd run once (stdin and stdout are grad_bench's), then
 * its peak resident set, the getrusage(RUSAGE_CHILDREN) maximum over the
 * one child waited for, in KB
 */
static int
rss_bench(char **cmd)
{
	struct rusage ru;
	pid_t pid;
	int st;

	fflush(stdout);
	if ((pid = fork()) == 0) {
		execvp(cmd[0], cmd);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) ||
	    WEXITSTATUS(st) != 0 || getrusage(RUSAGE_CHILDREN, &ru) != 0) {
		fprintf(stderr, "grad_bench: %s failed\n", cmd[0]);
		return 1;
	}
	printf("maxrss_kb=%ld\n", ru.ru_maxrss);
	return 0;
}

int
main(int argc, char **argv)
{
	int64_t n = 200;
	int reps;

	isa_setup();     /* SPIRT_ISA, as the tools honour it */

	if (argc > 3 && strcmp(argv[1], "--exec") == 0) {
		if (spirt_parse_i64(&n, argv[2], 1, 1000000))
			n = 1;
		return exec_bench((int)n, argv + 3);
	}
	if (argc > 2 && strcmp(argv[1], "--rss") == 0)
		return rss_bench(argv + 2);
	if (argc > 1 && spirt_parse_i64(&n, argv[1], 1, 1000000)) {
		fprintf(stderr, "grad_bench: bad repetitions \"%s\"\n", argv[1]);
		return 64;
	}
	reps = (int)n;

	if (reps < 3)
		reps = 3;
	if (blas_load(1) != 0) {
		fprintf(stderr, "grad_bench: %s\n", spirt_blas_error());
		return 69;
	}
	printf("core %s (%s)\n", spirt_blas_corename(),
	    spirt_blas_source_name());
	if (argc > 2) {         // one model: grad_bench reps spec [batch]
		if (argc > 3 && spirt_parse_i64(&n, argv[3], 1, 65536)) {
			fprintf(stderr, "grad_bench: bad batch \"%s\"\n",
			    argv[3]);
			return 64;
		}
		bench(argv[2], argc > 3 ? (size_t)n : 64, reps);
		return 0;
	}
	bench("mlp:784-256-128-10", 64, reps);
	bench("mlp:784-256-128-10", 256, reps);
	bench("cnn:1x28x28-32-64-10", 64, reps / 4 + 3);
	bench("resnet8:1x28x28-10", 64, reps / 8 + 3);
	bench("mobilenet:1x28x28-10", 64, reps / 8 + 3);
	return 0;
}
