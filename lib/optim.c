/* optim.c - optimisers (SGD, momentum, Nesterov, Adam, AdamW), lr schedules */
#include <math.h>
#include <string.h>

#include "optim.h"
#include "parse.h"
#include "vec.h"

/*
 * The step kernels work on 8 floats at a time through GCC/Clang vector
 * types (see agg.c), with a scalar tail, each compiled per x86-64 level
 * (SPIRT_DISPATCH, vec.h).  Per-element arithmetic is the same in both,
 * lane by lane, so results depend neither on n % 8 nor on the level.
 * sqrt is taken lane by lane (exact in IEEE arithmetic); built with
 * -fno-math-errno (mk/agg.mk) it becomes one vector instruction.
 */

#define SPIRT_PI 3.14159265358979323846


static const char *const kinds[] = {
	[SPIRT_OPT_SGD] = "sgd",
	[SPIRT_OPT_MOMENTUM] = "momentum",
	[SPIRT_OPT_ADAM] = "adam",
	[SPIRT_OPT_ADAMW] = "adamw",
};
static const char *const scheds[] = {
	[SPIRT_SCHED_CONSTANT] = "constant",
	[SPIRT_SCHED_STEP] = "step",
	[SPIRT_SCHED_COSINE] = "cosine",
};
#define NKINDS (sizeof kinds / sizeof kinds[0])
#define NSCHEDS (sizeof scheds / sizeof scheds[0])

void
spirt_optim_defaults(struct spirt_optim *o)
{
	memset(o, 0, sizeof *o);
	o->kind = SPIRT_OPT_SGD;
	o->lr = 0.01;
	o->momentum = 0.9;
	o->nesterov = 0;
	o->beta1 = 0.9;
	o->beta2 = 0.999;
	o->eps = 1e-8;
	o->wd = 0;
	o->schedule = SPIRT_SCHED_CONSTANT;
	o->every = 1000;
	o->gamma = 0.1;
	o->total = 1000;
	o->lr_min = 0;
}

int
spirt_optim_parse(const char *name)
{
	return spirt_parse_name(name, kinds, NKINDS);
}

const char *
spirt_optim_name(int kind)
{
	return kind > 0 && (size_t)kind < NKINDS ? kinds[kind] : NULL;
}

int
spirt_optim_schedule_parse(const char *name)
{
	return spirt_parse_name(name, scheds, NSCHEDS);
}

const char *
spirt_optim_schedule_name(int schedule)
{
	return schedule > 0 && (size_t)schedule < NSCHEDS ?
	    scheds[schedule] : NULL;
}

unsigned
spirt_optim_nstate(int kind)
{
	switch (kind) {
	case SPIRT_OPT_MOMENTUM: return 1;
	case SPIRT_OPT_ADAM: case SPIRT_OPT_ADAMW: return 2;
	default: return 0;
	}
}

int
spirt_optim_check(const struct spirt_optim *o)
{
	if (spirt_optim_name(o->kind) == NULL ||
	    spirt_optim_schedule_name(o->schedule) == NULL)
		return SPIRT_EINVAL;
	if (!(o->lr >= 0 && isfinite(o->lr)) || !(o->wd >= 0) ||
	    !isfinite(o->wd))
		return SPIRT_EINVAL;
	if (!(o->momentum >= 0 && o->momentum < 1))
		return SPIRT_EINVAL;
	if (o->nesterov && (o->kind != SPIRT_OPT_MOMENTUM ||
	    o->momentum == 0))
		return SPIRT_EINVAL;
	if (!(o->beta1 >= 0 && o->beta1 < 1) ||
	    !(o->beta2 >= 0 && o->beta2 < 1) || !(o->eps > 0))
		return SPIRT_EINVAL;
	if (o->every == 0 || o->total == 0 || !(o->gamma > 0 &&
	    o->gamma <= 1) || !(o->lr_min >= 0 && o->lr_min <= o->lr))
		return SPIRT_EINVAL;
	return 0;
}

double
spirt_optim_lr(const struct spirt_optim *o, uint64_t t)
{
	double x;

	switch (o->schedule) {
	case SPIRT_SCHED_STEP:
		return o->lr * pow(o->gamma, (double)(t / o->every));
	case SPIRT_SCHED_COSINE:
		x = (double)(t < o->total ? t : o->total) / (double)o->total;
		return o->lr_min + (o->lr - o->lr_min) *
		    (1 + cos(SPIRT_PI * x)) / 2;
	default:
		return o->lr;
	}
}

/* ---- kernels: each returns the OR of non-finite bits of g and theta' */

SPIRT_KERNEL uint32_t
step_sgd_k(float *th1, const float *th, const float *g, size_t n, float lr,
    float wd)
{
	uint32_t bad = 0;
	size_t j = 0;

#ifdef SPIRT_VEC
	vu8 vb = {0, 0, 0, 0, 0, 0, 0, 0};
	vf8 vlr = SPLAT8(lr), vwd = SPLAT8(wd);

	for (; j + VL8 <= n; j += VL8) {
		vf8 t, gg;

		LD8(t, th + j);
		LD8(gg, g + j);
		gg += vwd * t;
		t = t - vlr * gg;
		vb |= BAD8(gg) | BAD8(t);
		ST8(th1 + j, t);
	}
	bad = OR8(vb);
#endif
	for (; j < n; j++) {
		float t = th[j], gg = g[j] + wd * t;

		t = t - lr * gg;
		bad |= badbits(gg) | badbits(t);
		th1[j] = t;
	}
	return bad;
}

SPIRT_DISPATCH(static, uint32_t, step_sgd, (float *th1, const float *th,
    const float *g, size_t n, float lr, float wd), (th1, th, g, n, lr, wd))

SPIRT_KERNEL uint32_t
step_momentum_k(float *th1, float *v1, const float *th, const float *v,
    const float *g, size_t n, float lr, float wd, float mu, int nesterov)
{
	uint32_t bad = 0;
	size_t j = 0;

#ifdef SPIRT_VEC
	vu8 vb = {0, 0, 0, 0, 0, 0, 0, 0};
	vf8 vlr = SPLAT8(lr), vwd = SPLAT8(wd), vmu = SPLAT8(mu);
	vf8 zero = SPLAT8(0.0f);

	for (; j + VL8 <= n; j += VL8) {
		vf8 t, gg, v0 = zero, vv, d;

		LD8(t, th + j);
		LD8(gg, g + j);
		gg += vwd * t;
		if (v)
			LD8(v0, v + j);
		vv = vmu * v0 + gg;
		d = nesterov ? gg + vmu * vv : vv;
		t = t - vlr * d;
		vb |= BAD8(gg) | BAD8(t);
		ST8(v1 + j, vv);
		ST8(th1 + j, t);
	}
	bad = OR8(vb);
#endif
	for (; j < n; j++) {
		float t = th[j], gg = g[j] + wd * t;
		float vv = (v ? mu * v[j] : 0) + gg;
		float d = nesterov ? gg + mu * vv : vv;

		t = t - lr * d;
		bad |= badbits(gg) | badbits(t);
		v1[j] = vv;
		th1[j] = t;
	}
	return bad;
}

SPIRT_DISPATCH(static, uint32_t, step_momentum, (float *th1, float *v1,
    const float *th, const float *v, const float *g, size_t n, float lr,
    float wd, float mu, int nesterov),
    (th1, v1, th, v, g, n, lr, wd, mu, nesterov))

/* wd: coupled weight decay (adam); dwd: lr * wd decoupled (adamw) */
SPIRT_KERNEL uint32_t
step_adam_k(float *th1, float *m1, float *v1, const float *th,
    const float *m, const float *v, const float *g, size_t n, float a,
    float bc2, float b1, float b2, float eps, float wd, float dwd)
{
	uint32_t bad = 0;
	float c1 = 1 - b1, c2 = 1 - b2;
	size_t j = 0;

#ifdef SPIRT_VEC
	vu8 vb = {0, 0, 0, 0, 0, 0, 0, 0};
	vf8 va = SPLAT8(a), vbc2 = SPLAT8(bc2), vb1 = SPLAT8(b1);
	vf8 vb2 = SPLAT8(b2), vc1 = SPLAT8(c1), vc2 = SPLAT8(c2);
	vf8 veps = SPLAT8(eps), vwd = SPLAT8(wd), vdwd = SPLAT8(dwd);
	vf8 zero = SPLAT8(0.0f);

	for (; j + VL8 <= n; j += VL8) {
		vf8 t, gg, m0 = zero, v0 = zero, mm, vv, s, r;

		LD8(t, th + j);
		LD8(gg, g + j);
		gg += vwd * t;
		if (m) {
			LD8(m0, m + j);
			LD8(v0, v + j);
		}
		mm = vb1 * m0 + vc1 * gg;
		vv = vb2 * v0 + vc2 * (gg * gg);
		s = vv * vbc2;
		for (int l = 0; l < VL8; l++)
			r[l] = sqrtf(s[l]);
		t = t - va * mm / (r + veps) - vdwd * t;
		vb |= BAD8(gg) | BAD8(t);
		ST8(m1 + j, mm);
		ST8(v1 + j, vv);
		ST8(th1 + j, t);
	}
	bad = OR8(vb);
#endif
	for (; j < n; j++) {
		float t = th[j], gg = g[j] + wd * t;
		float mm = b1 * (m ? m[j] : 0) + c1 * gg;
		float vv = b2 * (m ? v[j] : 0) + c2 * (gg * gg);

		t = t - a * mm / (sqrtf(vv * bc2) + eps) - dwd * t;
		bad |= badbits(gg) | badbits(t);
		m1[j] = mm;
		v1[j] = vv;
		th1[j] = t;
	}
	return bad;
}

SPIRT_DISPATCH(static, uint32_t, step_adam, (float *th1, float *m1,
    float *v1, const float *th, const float *m, const float *v,
    const float *g, size_t n, float a, float bc2, float b1, float b2,
    float eps, float wd, float dwd),
    (th1, m1, v1, th, m, v, g, n, a, bc2, b1, b2, eps, wd, dwd))

int
spirt_optim_step_range(float *theta_out, float *state_out,
    const float *theta, const float *state_in, const float *g, size_t n,
    size_t j0, size_t len, const struct spirt_optim *o, uint64_t t,
    uint64_t k)
{
	double lr = spirt_optim_lr(o, t), kk = (double)k + 1;
	const float *si = state_in;
	uint32_t bad = 0;

	if (j0 > n || len > n - j0)
		return SPIRT_EINVAL;
	/* the range [j0, j0 + len) of each stream; state rows are n apart.
	 * A NULL state reads as zeros (no memset pass over the output). */
	theta_out += j0;
	theta += j0;
	g += j0;
	switch (o->kind) {
	case SPIRT_OPT_SGD:
		bad = step_sgd(theta_out, theta, g, len, (float)lr,
		    (float)o->wd);
		break;
	case SPIRT_OPT_MOMENTUM:
		bad = step_momentum(theta_out, state_out + j0, theta,
		    si ? si + j0 : NULL, g, len, (float)lr, (float)o->wd,
		    (float)o->momentum, o->nesterov);
		break;
	case SPIRT_OPT_ADAM:
	case SPIRT_OPT_ADAMW: {
		int w = o->kind == SPIRT_OPT_ADAMW;
		double a = lr / (1 - pow(o->beta1, kk));
		double bc2 = 1 / (1 - pow(o->beta2, kk));

		bad = step_adam(theta_out, state_out + j0, state_out + n + j0,
		    theta, si ? si + j0 : NULL, si ? si + n + j0 : NULL, g,
		    len, (float)a, (float)bc2, (float)o->beta1,
		    (float)o->beta2, (float)o->eps, w ? 0.0f : (float)o->wd,
		    w ? (float)(lr * o->wd) : 0.0f);
		break;
	}
	default:
		return SPIRT_EINVAL;
	}
	return bad & BADBIT ? SPIRT_ENAN : 0;
}

int
spirt_optim_step(float *theta_out, float *state_out, const float *theta,
    const float *state_in, const float *g, size_t n,
    const struct spirt_optim *o, uint64_t t, uint64_t k)
{
	return spirt_optim_step_range(theta_out, state_out, theta, state_in,
	    g, n, 0, n, o, t, k);
}
