/* keycmd.c - identities and member tokens: spirt-key keygen and invite
 * (spirt-key(1)), and spirt-peer's old spellings of both (keycmd.h) */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crypto.h"
#include "io.h"
#include "keycmd.h"
#include "keys.h"
#include "opt.h"
#include "parse.h"
#include "prim.h"
#include "tool.h"

#define EXPIRES_MAX (10 * 366 * 86400.0)       /* ten years, in seconds */

static struct {
	const char *expires, *group, *id, *out, *pub, *role, *run;
	int force;
} ko;

static const struct opt opts[] = {
	{ 0, NULL, "keygen", "make an identity key (mode 0600), print its "
	    "public key" },
	{ 0, NULL, "invite", "sign a member token with the group key" },
	{ 'e', "expires", "DUR", "token valid for DUR (s, m, h; default 24h)" },
	{ 'f', "force", NULL, "replace an existing key file" },
	{ 'g', "group", "FILE", "the group's secret key file" },
	{ 'i', "id", "ID", "the member's id (a function's binds it: "
	    "PEER.wN[-M])" },
	{ 'o', "output", "FILE", "write the token to FILE (default stdout)" },
	{ 'p', "public", "FILE", "also write the public key to FILE" },
	{ 'R', "role", "ROLE", "peer (default) or function" },
	{ 'r', "run", "ID", "the run the token admits to" },
	OPT_HELP,
	{ 'V', "version", NULL, "print version and crypto" },
	{ 0 }
};

static const struct optset cli = {
	"usage: spirt-key keygen [-f] [-p pubfile] keyfile\n"
	"       spirt-key invite [-e duration] [-o file] [-R role] -g groupkey\n"
	"           -i id -r run pubkey\n",
	NULL, NULL, 21, 0, opts, NULL
};

_Noreturn void
key_usage(int code)
{
	opt_usage(&cli, code);
}

_Noreturn void
key_version(void)
{
	printf("%s %s\ncrypto: %s (%s)\n", progname, SPIRT_VERSION,
	    spirt_prim_name(), spirt_prim_version());
	exit(fshut_stdout(0));
}

static void
options(int argc, char **argv)
{
	int c;

	while ((c = opt_next(&cli, argc, argv)) != -1)
		switch (c) {
		case 'e': ko.expires = optarg; break;
		case 'f': ko.force = 1; break;
		case 'g': ko.group = optarg; break;
		case 'i': ko.id = optarg; break;
		case 'o': ko.out = optarg; break;
		case 'p': ko.pub = optarg; break;
		case 'R': ko.role = optarg; break;
		case 'r': ko.run = optarg; break;
		case 'V': key_version();
		default: key_usage(1);
		}
}

static int
keygen(const char *path)
{
	unsigned char pk[SPIRT_PK_BYTES];
	char hex[SPIRT_PK_HEX];
	struct spirt_key *k;
	int rc;

	if (strcmp(path, "-") == 0)
		die(SPIRT_EX_USAGE, "a secret key is never written to standard "
		    "output");
	if ((rc = spirt_key_generate(&k)) != 0)
		dierc(rc, "key generation");
	rc = spirt_key_write(k, path, ko.force ? 0 : SPIRT_KEY_NOOVERWRITE);
	spirt_key_public(pk, k);
	spirt_key_free(k);
	if (rc == SPIRT_EOUTPUT(EEXIST))
		die(SPIRT_EX_CANTCREAT, "%s: key file exists (-f replaces it)",
		    path);
	if (rc != 0)
		dierc(rc, "%s", path);
	if (ko.pub != NULL && (rc = spirt_pubkey_write(pk, ko.pub)) != 0)
		dierc(rc, "%s", ko.pub);
	spirt_pubkey_format(hex, pk);
	puts(hex);
	return fshut_stdout(0);
}

/* 64 hex digits, else a public key file */
static void
load_pubkey(unsigned char pk[SPIRT_PK_BYTES], const char *arg)
{
	int rc;

	if (strlen(arg) == 2 * SPIRT_PK_BYTES && spirt_pubkey_parse(pk, arg) ==
	    0)
		return;
	if ((rc = spirt_pubkey_load(pk, arg)) != 0)
		dierc(rc, "%s", arg);
}

static int
invite(const char *pubarg)
{
	unsigned char pk[SPIRT_PK_BYTES], tok[SPIRT_TOKEN_BYTES];
	char text[600], peer[SPIRT_ID_MAX + 1];
	struct spirt_publish pub;
	uint32_t w0, w1;
	struct spirt_key *g;
	double secs = 86400;
	uint64_t now;
	size_t n;
	int rc, role = SPIRT_ROLE_PEER;

	if (ko.role != NULL && (role = spirt_role_parse(ko.role)) == 0)
		die(SPIRT_EX_USAGE, "-R: invalid role \"%s\" (peer or "
		    "function)", ko.role);
	if (!spirt_id_valid(ko.run))
		die(SPIRT_EX_USAGE, "-r: invalid run id \"%s\" (1-32 of "
		    "A-Z a-z 0-9 . _ -)", ko.run);
	if (!spirt_id_valid(ko.id))
		die(SPIRT_EX_USAGE, "-i: invalid id \"%s\" (1-32 of "
		    "A-Z a-z 0-9 . _ -)", ko.id);
	if (role == SPIRT_ROLE_FUNCTION && spirt_fn_binding(ko.id, peer,
	    sizeof peer, &w0, &w1) != 0)
		die(SPIRT_EX_USAGE, "-i: function id \"%s\" binds no worker "
		    "(PEER.wN or PEER.wN-M, e.g. p1.w0: the workers it may "
		    "write gradients for)", ko.id);
	if (ko.expires != NULL &&
	    (rc = spirt_parse_duration(&secs, ko.expires, 1, EXPIRES_MAX)) != 0)
		die(SPIRT_EX_USAGE, "-e: %s \"%s\" (1s to 87840h)",
		    rc == ERANGE ? "value out of range" : "invalid duration",
		    ko.expires);
	load_pubkey(pk, pubarg);
	if ((rc = spirt_key_load(&g, ko.group)) != 0) {
		warnrc(rc, "%s", ko.group);
		if (rc == SPIRT_EKEYPERM)
			info("hint: chmod 600 %s", ko.group);
		return spirt_exit(rc);
	}

	now = spirt_crypto_now();
	rc = spirt_token_make(tok, g, ko.run, ko.id, pk, role, now,
	    now + (uint64_t)(secs * 1e9));
	spirt_key_free(g);
	if (rc == 0)
		rc = spirt_token_format(text, sizeof text, &n, tok);
	if (rc != 0)
		dierc(rc, "token");
	if (ko.out == NULL || strcmp(ko.out, "-") == 0) {
		fwrite(text, 1, n, stdout);
		return fshut_stdout(0);
	}
	if ((rc = spirt_publish_open(&pub, ko.out, 0644)) == 0) {
		if ((rc = spirt_writeall(pub.fd, text, n)) != 0)
			spirt_publish_abort(&pub);
		else
			rc = spirt_publish_commit(&pub);
	}
	if (rc != 0)
		dierc(rc, "%s", ko.out);
	return fshut_stdout(0);
}

int
key_main(int argc, char **argv)
{
	const char *cmd = argv[0];
	int rc;

	optind = 1;
	options(argc, argv);
	argc -= optind;
	argv += optind;
	if ((rc = spirt_crypto_init()) != 0)
		dierc(rc, "libsodium");
	if (strcmp(cmd, "keygen") == 0) {
		if (argc != 1 || ko.expires || ko.group || ko.id || ko.out ||
		    ko.role || ko.run)
			key_usage(1);
		return keygen(argv[0]);
	}
	if (strcmp(cmd, "invite") == 0) {
		if (argc != 1 || ko.force || ko.pub || !ko.group || !ko.id ||
		    !ko.run)
			key_usage(1);
		return invite(argv[0]);
	}
	warnx_("%s: unknown command (keygen or invite)", cmd);
	key_usage(1);
}
