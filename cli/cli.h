/* cli.h - the `coli` subcommands. Each lives in its own cmd_*.c file and
 * returns the process exit status: 0 success, 1 runtime failure, 2 bad
 * usage. Errors are printed once, by the command, as one line on stderr. */
#ifndef COLI_CLI_H
#define COLI_CLI_H

enum { COLI_EXIT_OK = 0, COLI_EXIT_FAIL = 1, COLI_EXIT_USAGE = 2 };

typedef int (*coli_cmd_fn)(int argc, char **argv);

int cmd_convert(int argc, char **argv);
int cmd_pull(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_synth(int argc, char **argv);
int cmd_logits(int argc, char **argv);
int cmd_generate(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_chat(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_sessions(int argc, char **argv);
int cmd_iobench(int argc, char **argv);
int cmd_doctor(int argc, char **argv);
int cmd_perplexity(int argc, char **argv);
int cmd_batch(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_atlas(int argc, char **argv);

/* Print "coli SUBCMD: message" on stderr. */
void cli_errorf(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
