/* spirt-peer.c - peer identities and member tokens (keygen, invite) */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "crypto.h"
#include "io.h"
#include "parse.h"
#include "tool.h"

#define USAGE \
"usage: spirt-peer keygen [-f] [-p pubfile] keyfile\n" \
"       spirt-peer invite [-e duration] [-o file] [-R role] -g groupkey\n" \
"           -i id -r run pubkey\n"

#define EXPIRES_MAX (10 * 366 * 86400.0)       /* ten years, in seconds */

static struct {
	const char *expires, *group, *id, *out, *pub, *role, *run;
	int force;
} o;

static _Noreturn void
usage(int code)
{
	fputs(USAGE, code ? stderr : stdout);
	if (!code)
		fputs("\n"
		    "  keygen             make an identity key (mode 0600), "
		    "print its public key\n"
		    "  invite             sign a member token with the group "
		    "key\n"
		    "  -e, --expires DUR  token valid for DUR (s, m, h; "
		    "default 24h)\n"
		    "  -f, --force        replace an existing key file\n"
		    "  -g, --group FILE   the group's secret key file\n"
		    "  -i, --id ID        the member's id\n"
		    "  -o, --output FILE  write the token to FILE (default "
		    "stdout)\n"
		    "  -p, --public FILE  also write the public key to FILE\n"
		    "  -R, --role ROLE    peer (default) or function\n"
		    "  -r, --run ID       the run the token admits to\n"
		    "  -h, --help         this help\n"
		    "  -V, --version      print version\n", stdout);
	exit(code ? SPIRT_EX_USAGE : fshut_stdout(0));
}

static void
options(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "expires", required_argument, NULL, 'e' },
		{ "force", no_argument, NULL, 'f' },
		{ "group", required_argument, NULL, 'g' },
		{ "help", no_argument, NULL, 'h' },
		{ "id", required_argument, NULL, 'i' },
		{ "output", required_argument, NULL, 'o' },
		{ "public", required_argument, NULL, 'p' },
		{ "role", required_argument, NULL, 'R' },
		{ "run", required_argument, NULL, 'r' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	int c;

	while ((c = getopt_long(argc, argv, "+e:fg:hi:o:p:R:r:V", lo, NULL)) !=
	    -1)
		switch (c) {
		case 'e': o.expires = optarg; break;
		case 'f': o.force = 1; break;
		case 'g': o.group = optarg; break;
		case 'h': usage(0);
		case 'i': o.id = optarg; break;
		case 'o': o.out = optarg; break;
		case 'p': o.pub = optarg; break;
		case 'R': o.role = optarg; break;
		case 'r': o.run = optarg; break;
		case 'V': print_version();
		default: usage(1);
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
	rc = spirt_key_write(k, path, o.force ? 0 : SPIRT_KEY_NOOVERWRITE);
	spirt_key_public(pk, k);
	spirt_key_free(k);
	if (rc == SPIRT_EOUTPUT(EEXIST))
		die(SPIRT_EX_CANTCREAT, "%s: key file exists (-f replaces it)",
		    path);
	if (rc != 0)
		dierc(rc, "%s", path);
	if (o.pub != NULL && (rc = spirt_pubkey_write(pk, o.pub)) != 0)
		dierc(rc, "%s", o.pub);
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
	char text[600];
	struct spirt_publish pub;
	struct spirt_key *g;
	double secs = 86400;
	uint64_t now;
	size_t n;
	int rc, role = SPIRT_ROLE_PEER;

	if (o.role != NULL && (role = spirt_role_parse(o.role)) == 0)
		die(SPIRT_EX_USAGE, "-R: invalid role \"%s\" (peer or "
		    "function)", o.role);
	if (!spirt_id_valid(o.run))
		die(SPIRT_EX_USAGE, "-r: invalid run id \"%s\" (1-32 of "
		    "A-Z a-z 0-9 . _ -)", o.run);
	if (!spirt_id_valid(o.id))
		die(SPIRT_EX_USAGE, "-i: invalid id \"%s\" (1-32 of "
		    "A-Z a-z 0-9 . _ -)", o.id);
	if (o.expires != NULL &&
	    (rc = spirt_parse_duration(&secs, o.expires, 1, EXPIRES_MAX)) != 0)
		die(SPIRT_EX_USAGE, "-e: %s \"%s\" (1s to 87840h)",
		    rc == ERANGE ? "value out of range" : "invalid duration",
		    o.expires);
	load_pubkey(pk, pubarg);
	if ((rc = spirt_key_load(&g, o.group)) != 0) {
		warnrc(rc, "%s", o.group);
		if (rc == SPIRT_EKEYPERM)
			info("hint: chmod 600 %s", o.group);
		return spirt_exit(rc);
	}

	now = spirt_crypto_now();
	rc = spirt_token_make(tok, g, o.run, o.id, pk, role, now,
	    now + (uint64_t)(secs * 1e9));
	spirt_key_free(g);
	if (rc == 0)
		rc = spirt_token_format(text, sizeof text, &n, tok);
	if (rc != 0)
		dierc(rc, "token");
	if (o.out == NULL || strcmp(o.out, "-") == 0) {
		fwrite(text, 1, n, stdout);
		return fshut_stdout(0);
	}
	if ((rc = spirt_publish_open(&pub, o.out, 0644)) == 0) {
		if ((rc = spirt_writeall(pub.fd, text, n)) != 0)
			spirt_publish_abort(&pub);
		else
			rc = spirt_publish_commit(&pub);
	}
	if (rc != 0)
		dierc(rc, "%s", o.out);
	return fshut_stdout(0);
}

int
main(int argc, char **argv)
{
	const char *cmd;
	int rc;

	progname = "spirt-peer";
	checkfds();

	options(argc, argv);
	argc -= optind;
	argv += optind;
	if (argc < 1)
		usage(1);
	cmd = argv[0];
	optind = 1;
	options(argc, argv);
	argc -= optind;
	argv += optind;

	if ((rc = spirt_crypto_init()) != 0)
		dierc(rc, "libsodium");
	if (strcmp(cmd, "keygen") == 0) {
		if (argc != 1 || o.expires || o.group || o.id || o.out ||
		    o.role || o.run)
			usage(1);
		return keygen(argv[0]);
	}
	if (strcmp(cmd, "invite") == 0) {
		if (argc != 1 || o.force || o.pub || !o.group || !o.id ||
		    !o.run)
			usage(1);
		return invite(argv[0]);
	}
	warnx_("%s: unknown command (keygen or invite)", cmd);
	usage(1);
}
