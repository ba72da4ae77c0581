/* keycmd.h - spirt-key's commands, shared with spirt-peer's old spellings */
#ifndef SPIRT_KEYCMD_H
#define SPIRT_KEYCMD_H

/*
 * argv[0] is the command, keygen or invite, argv[1..] its options and
 * operand (spirt-key(1)); returns the exit code, or exits (64 with the
 * usage on a bad command line).  Messages carry the caller's progname.
 */
int key_main(int argc, char **argv);
/* spirt-key's usage on stderr, exit 64; with code 0, the help, exit 0 */
_Noreturn void key_usage(int code);
/* the version and the crypto code the build chose, exit 0 */
_Noreturn void key_version(void);

#endif
