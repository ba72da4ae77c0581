/* test_invoke.c - a gateway's answers checked (lib/invoke.c) */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "faas.h"
#include "invoke.h"

#define P 7

/* A gradient record of the model m: step, origin, name; *len bytes. */
static unsigned char *
record(size_t *len, int dtype, uint64_t n, const char *name, uint64_t step,
    uint32_t origin)
{
	struct spirt_tensor t;
	unsigned char *rec;
	float v[P + 1];
	uint64_t i;

	for (i = 0; i < P + 1; i++)
		v[i] = (float)i / 4;
	if (spirt_tensor_init(&t, dtype, 1, &n) != 0 ||
	    spirt_tensor_set_name(&t, name) != 0)
		abort();
	t.step = step;
	t.origin = origin;
	t.samples = 8;
	t.loss = 1.5;
	spirt_tensor_set_revision(&t, 3);
	*len = spirt_tensor_reclen(&t);
	if ((rec = malloc(*len)) == NULL ||
	    spirt_tensor_encode(rec, *len, &t, v) != 0)
		abort();
	return rec;
}

/* check the record's answer for (step 4, worker 2) of m: want */
static void
expect(unsigned char *rec, size_t len, int want, const char *why)
{
	struct spirt_tensor m, t;
	uint64_t p = P;
	char msg[320] = "";
	int rc;

	if (spirt_tensor_init(&m, SPIRT_F32, 1, &p) != 0 ||
	    spirt_tensor_set_name(&m, "mlp:2-1-3") != 0)
		abort();
	rc = spirt_invoke_check(&t, rec, len, 4, 2, &m, msg, sizeof msg);
	if (rc != want || (why != NULL && strstr(msg, why) == NULL)) {
		fprintf(stderr, "check: got %d \"%s\", want %d \"%s\"\n", rc,
		    msg, want, why ? why : "");
		check_failed = 1;
	}
	if (rc == 0 && (t.samples != 8 || t.loss != 1.5 || t.revision != 3))
		check_failed = 1;
	free(rec);
}

/* a record built as record() does, checked as expect() does */
static void
try(int dtype, uint64_t n, const char *name, uint64_t step,
    uint32_t origin, int want, const char *why)
{
	size_t len;
	unsigned char *rec = record(&len, dtype, n, name, step, origin);

	expect(rec, len, want, why);
}

int
main(void)
{
	static const int codes[] = { 64, 65, 66, 69, 71, 73, 74, 75 };
	unsigned char *r;
	size_t len, i;

	try(SPIRT_F32, P, "mlp:2-1-3", 4, 2, 0, NULL);
	try(SPIRT_F32, P, "mlp:2-1-3", 4, 0, SPIRT_EADDR,
	    "another worker's (origin 0, not 2)");
	try(SPIRT_F32, P, "mlp:2-1-3", 3, 2, SPIRT_ESTEP, "step 3, not 4");
	try(SPIRT_F32, P, "mlp:2-2-3", 4, 2, SPIRT_EMODEL, "another model's");
	try(SPIRT_F32, P + 1, "mlp:2-1-3", 4, 2, SPIRT_ESHAPE,
	    "8 values; the model's gradient is f32 [7]");
	try(SPIRT_I32, P, "mlp:2-1-3", 4, 2, SPIRT_EDTYPE, "i32");
	// a payload byte changed: the checksum; cut short: torn
	r = record(&len, SPIRT_F32, P, "mlp:2-1-3", 4, 2);
	r[len - 20] ^= 1;
	expect(r, len, SPIRT_ECHECKSUM, "the record");
	r = record(&len, SPIRT_F32, P, "mlp:2-1-3", 4, 2);
	CHECK(spirt_invoke_check(&(struct spirt_tensor){ 0 }, r, len - 1, 4,
	    2, &(struct spirt_tensor){ .nelem = P }, (char[8]){ 0 }, 8) != 0);
	free(r);

	// Lambda's errorType back to the code spirt-grad's runtime sent
	for (i = 0; i < sizeof codes / sizeof codes[0]; i++)
		CHECK(spirt_invoke_error_code(spirt_faas_error_type(codes[i]))
		    == codes[i]);
	CHECK(spirt_invoke_error_code("Spirt.Software") == 70);
	CHECK(spirt_invoke_error_code("Runtime.ExitError") == 70);
	CHECK(spirt_invoke_error_code("") == 70);
	return check_failed;
}
