/* test_faas.c - FaaS requests and answers (lib/faas.c) */
#include <string.h>

#include "check.h"
#include "faas.h"

/* Parse s as how (-1: a query string, -2: a body); 0 or the code. */
static int
parse(struct spirt_faas_req *r, int how, const char *s)
{
	spirt_faas_req_init(r);
	if (how == -1)
		return spirt_faas_query(r, s, strlen(s));
	if (how == -2)
		return spirt_faas_body(r, s, strlen(s));
	return spirt_faas_json(r, s, strlen(s), how);
}

static void
good(int how, const char *s, unsigned has, uint64_t step, uint32_t w,
    const char *model)
{
	struct spirt_faas_req r;
	int rc = parse(&r, how, s);

	if (rc != 0 || r.has != has || r.step != step || r.worker != w ||
	    strcmp(r.model, model) != 0) {
		fprintf(stderr, "good: %s: rc %d (%s), has %u step %llu "
		    "worker %u model \"%s\"\n", s, rc, r.msg, r.has,
		    (unsigned long long)r.step, r.worker, r.model);
		check_failed = 1;
	}
}

static void
bad(int how, const char *s, const char *why)
{
	struct spirt_faas_req r;
	int rc = parse(&r, how, s);

	if (rc == 0 || strstr(r.msg, why) == NULL) {
		fprintf(stderr, "bad: %s: rc %d, msg \"%s\", wanted \"%s\"\n",
		    s, rc, r.msg, why);
		check_failed = 1;
	}
}

int
main(void)
{
	struct spirt_faas_req r;
	struct spirt_faas_ans a;
	char *s;
	size_t n;
	const unsigned SW = SPIRT_FAAS_STEP | SPIRT_FAAS_WORKER, ALL = SW |
	    SPIRT_FAAS_MODEL;

	/* query strings, as OpenFaaS's Http_Query holds them */
	good(-1, "step=3&worker=1&model=mlp", ALL, 3, 1, "mlp");
	good(-1, "", 0, 0, 0, "");
	good(-1, "&&step=0&", SPIRT_FAAS_STEP, 0, 0, "");
	good(-1, "model=m%2Dx.1&step=18446744073709551614", SPIRT_FAAS_STEP |
	    SPIRT_FAAS_MODEL, UINT64_MAX - 1, 0, "m-x.1");
	good(-1, "worker=4294967294", SPIRT_FAAS_WORKER, 0, UINT32_MAX - 1, "");
	bad(-1, "step=18446744073709551615", "out of range");
	bad(-1, "worker=4294967295", "out of range");
	bad(-1, "step=03", "not a decimal");
	bad(-1, "step=+3", "not a decimal");
	bad(-1, "step=", "not a decimal");
	bad(-1, "step=1%20", "not a decimal");
	bad(-1, "step=1&step=1", "step given twice");
	bad(-1, "batch=8", "unknown parameter \"batch\"");
	bad(-1, "step", "not key=value");
	bad(-1, "step=%4", "bad encoding");
	bad(-1, "step=%zz", "bad encoding");
	bad(-1, "model=%00", "bad encoding");
	bad(-1, "model=../x", "model \"../x\"");
	bad(-1, "model=.x", "model \".x\"");

	/* paths */
	spirt_faas_req_init(&r);
	CHECK_RC(spirt_faas_path(&r, "/grad/7/2"));
	CHECK(r.has == SW && r.step == 7 && r.worker == 2);
	CHECK_RC(spirt_faas_query(&r, "model=mlp", 9));
	CHECK(r.has == ALL);
	CHECK(spirt_faas_query(&r, "step=7", 6) == SPIRT_EINVAL);
	spirt_faas_req_init(&r);
	CHECK_RC(spirt_faas_path(&r, "/"));
	CHECK_RC(spirt_faas_path(&r, ""));
	CHECK(r.has == 0);
	CHECK(spirt_faas_path(&r, "/grad/7") == SPIRT_ENOTFOUND);
	CHECK(spirt_faas_path(&r, "/x") == SPIRT_ENOTFOUND);
	CHECK(spirt_faas_path(&r, "/grad/7/2/3") == SPIRT_EINVAL);
	spirt_faas_req_init(&r);
	CHECK(spirt_faas_path(&r, "/grad/x/2") == SPIRT_EINVAL);

	/* JSON: OpenWhisk's argument, a Lambda event, /run's value */
	good(SPIRT_FAAS_JSON_FLAT, "{\"step\":3,\"worker\":\"1\","
	    "\"model\":\"mlp\"}", ALL, 3, 1, "mlp");
	good(SPIRT_FAAS_JSON_FLAT, " { } ", 0, 0, 0, "");
	good(SPIRT_FAAS_JSON_FLAT, "{\"st\\u0065p\":null,\"worker\":2}",
	    SPIRT_FAAS_WORKER, 0, 2, "");
	bad(SPIRT_FAAS_JSON_FLAT, "{\"step\":3.5}", "not a decimal");
	bad(SPIRT_FAAS_JSON_FLAT, "{\"step\":-1}", "not a decimal");
	bad(SPIRT_FAAS_JSON_FLAT, "{\"step\":true}", "a number or a string");
	bad(SPIRT_FAAS_JSON_FLAT, "{\"step\":{}}", "a number or a string");
	bad(SPIRT_FAAS_JSON_FLAT, "{\"x\":1}", "unknown parameter \"x\"");
	bad(SPIRT_FAAS_JSON_FLAT, "{\"step\":1", "'}' expected at byte 9");
	bad(SPIRT_FAAS_JSON_FLAT, "{\"step\":1}x", "junk after");
	bad(SPIRT_FAAS_JSON_FLAT, "[1]", "object expected");
	bad(SPIRT_FAAS_JSON_FLAT, "{\"step\":\"1\n\"}", "unexpected newline");
	bad(SPIRT_FAAS_JSON_FLAT, "", "object expected");
	bad(SPIRT_FAAS_JSON_FLAT, "{\"step\":1,\"step\":2}", "duplicate");
	bad(SPIRT_FAAS_JSON_VALUE, "{\"a\":{\"b\":1,\"b\":1}}", "duplicate");
	bad(SPIRT_FAAS_JSON_FLAT, "{\"step\":9223372036854775808}",
	    "too big integer");
	good(SPIRT_FAAS_JSON_FLAT, "{\"step\":9223372036854775807}",
	    SPIRT_FAAS_STEP, 9223372036854775807u, 0, "");
	good(SPIRT_FAAS_JSON_FLAT, "{\"step\":\"18446744073709551614\"}",
	    SPIRT_FAAS_STEP, 18446744073709551614u, 0, "");
	good(SPIRT_FAAS_JSON_VALUE, "{\"action_name\":\"/ns/g\",\"value\":"
	    "{\"step\":5,\"worker\":0},\"deadline\":\"1\",\"x\":[1,{\"a\":"
	    "[]},\"s\\\"\",null,true,false,-1.5e3]}", SW, 5, 0, "");
	good(SPIRT_FAAS_JSON_VALUE, "{\"namespace\":\"n\"}", 0, 0, 0, "");
	bad(SPIRT_FAAS_JSON_VALUE, "{\"value\":{\"y\":1}}", "unknown");
	good(SPIRT_FAAS_JSON_EVENT, "{\"step\":9}", SPIRT_FAAS_STEP, 9, 0, "");
	good(SPIRT_FAAS_JSON_EVENT, "{\"rawPath\":\"/\",\"headers\":{\"a\":"
	    "\"b\"},\"queryStringParameters\":{\"step\":\"4\",\"worker\":"
	    "\"3\"}}", SW, 4, 3, "");
	good(SPIRT_FAAS_JSON_EVENT, "{\"queryStringParameters\":null}", 0, 0,
	    0, "");
	bad(SPIRT_FAAS_JSON_EVENT, "{\"headers\":{}}", "unknown parameter");
	{
		char deep[80];

		snprintf(deep, sizeof deep, "{\"a\":%.*s", 40,
		    "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[");
		bad(SPIRT_FAAS_JSON_VALUE, deep, "nested too deep");
	}
	{
		/* {"a":[0,0,...]}: 3 values and one per ',', 65536 at most */
		size_t k, z = 65533;
		char *many = malloc(6 + 2 * z + 6);

		CHECK(many != NULL);
		if (many == NULL)
			return 1;
		memcpy(many, "{\"a\":[", 6);
		for (k = 0; k < z; k++)
			memcpy(many + 6 + 2 * k, "0,", 2);
		memcpy(many + 6 + 2 * z, "0]}", 4);
		good(SPIRT_FAAS_JSON_VALUE, many, 0, 0, 0, "");
		memcpy(many + 6 + 2 * z, "0,0]}", 6);
		bad(SPIRT_FAAS_JSON_VALUE, many, "more than 65536 values");
		free(many);
	}

	/* bodies: empty, JSON or a form */
	good(-2, "", 0, 0, 0, "");
	good(-2, " \n", 0, 0, 0, "");
	good(-2, "step=2&worker=1\n", SW, 2, 1, "");
	good(-2, "{\"step\":2}", SPIRT_FAAS_STEP, 2, 0, "");

	/* everything a classic-watchdog process gets at once */
	spirt_faas_req_init(&r);
	CHECK_RC(spirt_faas_cgi(&r, "POST", "/grad/1/2", "model=mlp", NULL,
	    NULL, 0));
	CHECK(r.has == ALL && r.step == 1 && r.worker == 2);
	spirt_faas_req_init(&r);
	CHECK(spirt_faas_cgi(&r, "PUT", NULL, NULL, NULL, NULL, 0) ==
	    SPIRT_EINVAL);
	spirt_faas_req_init(&r);
	CHECK(spirt_faas_cgi(&r, "GET", NULL, "step=1", "{\"step\":1}",
	    NULL, 0) == SPIRT_EINVAL && strstr(r.msg, "twice") != NULL);

	/* answers */
	memset(&a, 0, sizeof a);
	a.step = 3;
	a.worker = 1;
	a.samples = 64;
	a.loss = 0.5;
	strcpy(a.key, "grad/3/1");
	CHECK_RC(spirt_faas_json_answer(&s, &n, &a, 0));
	CHECK(strcmp(s, "{\"step\":3,\"worker\":1,\"samples\":64,\"loss\":"
	    "0.5,\"key\":\"grad/3/1\"}\n") == 0 && n == strlen(s));
	free(s);
	a.key[0] = '\0';
	a.rec = malloc(4);
	memcpy(a.rec, "SPRT", 4);
	a.len = 4;
	CHECK_RC(spirt_faas_json_answer(&s, &n, &a, 1));
	CHECK(strstr(s, ",\"record\":\"U1BSVA==\"}\n") != NULL);
	free(s);
	a.len = 5;
	memcpy(a.rec, "SPRT", 4);
	spirt_faas_ans_clear(&a);
	CHECK(a.rec == NULL && a.code == 0);
	a.code = 66;
	strcpy(a.msg, "spirt-grad: \"x\"\\\n\x01: not found");
	CHECK_RC(spirt_faas_json_answer(&s, &n, &a, 1));
	CHECK(strcmp(s, "{\"error\":\"spirt-grad: \\\"x\\\"\\\\\\u000a"
	    "\\u0001: not found\",\"exit\":66}\n") == 0);
	free(s);
	CHECK_RC(spirt_faas_json_lambda_error(&s, &n, 65, "bad"));
	CHECK(strcmp(s, "{\"errorMessage\":\"bad\",\"errorType\":"
	    "\"Spirt.DataErr\",\"stackTrace\":[]}") == 0);
	free(s);
	CHECK(spirt_faas_http_status(0) == 200);
	CHECK(spirt_faas_http_status(64) == 400);
	CHECK(spirt_faas_http_status(65) == 422);
	CHECK(spirt_faas_http_status(66) == 404);
	CHECK(spirt_faas_http_status(75) == 503);
	CHECK(spirt_faas_http_status(74) == 500);
	return check_failed;
}
