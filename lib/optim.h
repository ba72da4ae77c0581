/* optim.h - optimisers (SGD, momentum, Nesterov, Adam, AdamW), lr schedules */
#ifndef SPIRT_OPTIM_H
#define SPIRT_OPTIM_H

#include <stddef.h>
#include <stdint.h>

#include "spirt.h"

/*
 * One optimiser step over P parameters is one streaming pass: read theta,
 * the gradient g and S state rows, write theta' and S state rows.  The
 * state is stored as a float32 [S, P] tensor (opt/<name>@<t>): S = 0 for
 * SGD, 1 (velocity) for momentum, 2 (first and second moments) for Adam.
 *
 * Update rules (g' = g + wd * theta for the coupled weight decay of SGD,
 * momentum and Adam; AdamW decays theta directly):
 *
 *   sgd       theta' = theta - lr * g'
 *   momentum  v' = mu * v + g';  theta' = theta - lr * v'
 *             Nesterov: theta' = theta - lr * (g' + mu * v')
 *   adam      m' = b1 m + (1 - b1) g';  v' = b2 v + (1 - b2) g'^2
 *             theta' = theta - lr * (m' / (1 - b1^k)) /
 *                      (sqrt(v' / (1 - b2^k)) + eps)
 *   adamw     as adam with g' = g, then theta' -= lr * wd * theta
 *
 * where k is the number of steps the state has seen, this one included
 * (the opt record's count field), and lr = spirt_optim_lr(o, t).
 */

enum spirt_optim_kind {
	SPIRT_OPT_SGD = 1,
	SPIRT_OPT_MOMENTUM,
	SPIRT_OPT_ADAM,
	SPIRT_OPT_ADAMW
};

enum spirt_optim_schedule {
	SPIRT_SCHED_CONSTANT = 1,       /* lr */
	SPIRT_SCHED_STEP,               /* lr * gamma^floor(t / every) */
	SPIRT_SCHED_COSINE              /* lr_min + (lr - lr_min) *
					   (1 + cos(pi * min(t, total) /
					   total)) / 2 */
};

struct spirt_optim {
	int kind;               /* enum spirt_optim_kind */
	double lr;              /* base learning rate */
	double momentum;        /* mu (momentum) */
	int nesterov;           /* momentum: Nesterov variant */
	double beta1, beta2, eps;       /* adam, adamw */
	double wd;              /* weight decay */
	int schedule;           /* enum spirt_optim_schedule */
	uint64_t every;         /* step schedule: decay period in steps */
	double gamma;           /* step schedule: decay factor */
	uint64_t total;         /* cosine schedule: steps to lr_min */
	double lr_min;          /* cosine schedule: final lr */
};

/* Defaults: sgd, lr 0.01, momentum 0.9, beta1 0.9, beta2 0.999, eps 1e-8,
 * wd 0, constant schedule, every 1000, gamma 0.1, total 1000, lr_min 0. */
void spirt_optim_defaults(struct spirt_optim *o) SPIRT_NONNULL(1);

/* Kind for "sgd", "momentum", "adam", "adamw" (0 if unknown), and back. */
int spirt_optim_parse(const char *name);
const char *spirt_optim_name(int kind);
/* Schedule for "constant", "step", "cosine" (0 if unknown), and back. */
int spirt_optim_schedule_parse(const char *name);
const char *spirt_optim_schedule_name(int schedule);

/* State rows S for kind (0, 1, 2, 2), or 0 if unknown. */
unsigned spirt_optim_nstate(int kind);

/* 0 or SPIRT_EINVAL: unknown kind or schedule, lr < 0, momentum or betas
 * outside [0, 1), eps <= 0, wd < 0, every or total 0, gamma outside
 * (0, 1], nesterov without momentum. */
SPIRT_MUST_CHECK int spirt_optim_check(const struct spirt_optim *o)
    SPIRT_NONNULL(1);

/* Learning rate at step t under o's schedule. */
double spirt_optim_lr(const struct spirt_optim *o, uint64_t t)
    SPIRT_NONNULL(1);

/*
 * Apply one step at model step t.  theta_out (out, n) and state_out (out,
 * nstate * n, rows of n) receive the result; theta (in, n), state_in (in,
 * nstate * n, NULL means zeros) and g (in, n) are read.  Outputs may be
 * the same buffers as the matching inputs (in place).  k is the number of
 * steps state_in has seen (0 for a fresh state).  Returns 0, or
 * SPIRT_ENAN when g or the new theta holds NaN/Inf (outputs then hold
 * garbage and must be discarded).
 */
SPIRT_MUST_CHECK int spirt_optim_step(float *theta_out, float *state_out,
    const float *theta, const float *state_in, const float *g, size_t n,
    const struct spirt_optim *o, uint64_t t, uint64_t k)
    SPIRT_NONNULL(1, 3, 5, 7);
/*
 * The same step on elements [j0, j0 + len) of every stream only (state
 * rows still n apart), for a caller that works tile by tile, say to
 * checksum each tile of the output while it is in cache.  Each element
 * comes out bit for bit as from spirt_optim_step().  Returns as it does,
 * or SPIRT_EINVAL when the range is not inside [0, n).
 */
SPIRT_MUST_CHECK int spirt_optim_step_range(float *theta_out,
    float *state_out, const float *theta, const float *state_in,
    const float *g, size_t n, size_t j0, size_t len,
    const struct spirt_optim *o, uint64_t t, uint64_t k)
    SPIRT_NONNULL(1, 3, 5, 9);

#endif
