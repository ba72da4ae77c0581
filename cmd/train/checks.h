/* checks.h - spirt-train's set-up before the first step, in its front:
 * the peers, the rules, the attack, the model and the data, asked of the
 * library (no tool run but the demo's spirt-shard) */
#ifndef SPIRT_TRAIN_CHECKS_H
#define SPIRT_TRAIN_CHECKS_H

/* what the loop needs of the peers file (spirt-peer peers' assignments) */
struct train_peers {
	long long np;           /* the members, P */
	char *self, *selfurl;   /* this one's id and location */
	char *others;           /* the others' locations, blank-separated */
	char *urls;             /* ... those that are http:// */
	char *oids;             /* ID:LINE of each other */
	int spare;              /* a line (this one's or another's) says
				 * spare */
};

/*
 * Read the peers file path (spirt-peer peers' reading, cmd/peer/peers.c)
 * for line peer into *p (its strings the caller's to free).  Dies as
 * spirt-peer peers did: 65 a bad line or no peer, 66 unreadable, 64 a
 * --peer past its lines.
 */
void train_peers(struct train_peers *p, const char *path, long long peer);

/*
 * The aggregation rule of args (spirt-agg's options as the front gives
 * them: -r, --trim, --byzantine, --select, --tau, --iters, --bucket,
 * --seed, --worker-momentum) for w inputs, checked as spirt-agg
 * --check-rule W checks it; on failure 64, "what: " and its words.
 */
void train_rule(const char *what, const char *args, unsigned long long w);

/* --byzantine byz's attack, as spirt-attack parses it: 64 when it is not
 * one (labelflip, spirt-grad's, is) */
void train_attack(const char *byz, const char *attack);

/*
 * The model's spec: *spec empty (a model of one's own without --spec),
 * the name of the first model/<model>@ record of the store, else 64 (none)
 * or 65 (no name); given, parsed as spirt-init parses it (64, named).
 */
void train_spec(const char **spec, const char *store, const char *model);

/* the data sets and what the loop computes of them once */
struct train_data {
	const char *store, *data, *train, *test, *model;
	int dsopt;              /* --train or --test given */
	long long np, nw, batch, epochs, steps, every;
	/* out */
	int shtrain, shtest;    /* the loop shards --data's set first */
	long long per, spe, total, stop;        /* every: the eval's */
	char last[24];          /* newest model/<model>@ step, or "" */
};

/*
 * The data sets, checked and counted, reading the store only: 66 a data
 * set missing, 65 its shards not the P x M functions', 64 a batch larger
 * than a worker's samples; then the steps per epoch, the steps in all,
 * where the run stops, the evaluations' period and the newest model
 * version.  --data's demo sets (neither --train nor --test given) the
 * loop shards when missing (spirt-shard changes the store, and runs
 * after the loop's own checks): counted from the IDX file then.
 */
void train_data(struct train_data *d);

#endif
