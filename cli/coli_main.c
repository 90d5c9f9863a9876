/* coli_main.c - `coli` command dispatch. */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "cmd_atlas_mirror.h"

struct coli_command {
	const char *name;
	coli_cmd_fn fn;
	const char *summary;
};

/* Keep in the order of coli(1). */
static const struct coli_command commands[] = {
	/* COMMANDS-TABLE: one line per subcommand, added as each lands. */
	{ "tokenize", cmd_tokenize, "text to token ids and back, chat rendering (JSON)" },
	{ "synth", cmd_synth, "write a random model of the real architecture (HF layout)" },
	{ "convert", cmd_convert, "Hugging Face checkpoint -> model container (quantize, resumable)" },
	{ "pull", cmd_pull, "Hugging Face Hub repository -> model container, shard by shard" },
	{ "info", cmd_info, "summarize a model container (text or --json)" },
	{ "logits", cmd_logits, "logits of a token sequence as JSON (reference checks)" },
	{ "generate", cmd_generate, "generate a continuation of a prompt" },
	{ "bench", cmd_bench, "prefill/decode speed, expert I/O, cache policy, kernel bandwidth (JSON)" },
	{ "serve", cmd_serve, "OpenAI/Anthropic-compatible HTTP endpoint (headless)" },
	{ "batch", cmd_batch, "OpenAI Batch API JSONL answered in-process, slots batched, resumable" },
	{ "compare", cmd_compare, "local vs remote endpoint on the same prompts: TTFT, rates, JSON field diff" },
	{ "sessions", cmd_sessions, "list, show, rm, rename, gc persisted KV sessions" },
	{ "doctor", cmd_doctor, "read-only readiness checks of a model and this machine" },
	{ "iobench", cmd_iobench, "random-read baseline of a drive at 4 KiB and expert size" },
	{ "chat", cmd_chat, "plain-terminal chat through the model's chat template" },
	/* atlas: mirror planning; merged with cmd_atlas.c by the coordinator */
	{ "atlas", cmd_atlas_plan_mirror, "expert atlas: plan and write a partial mirror (--plan-mirror)" },
	{ "perplexity", cmd_perplexity, "loss and perplexity of the model on a text file" },
	{ NULL, NULL, NULL },
};

void cli_errorf(const char *cmd, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "coli %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: coli COMMAND [ARGS...]\n\ncommands:\n");
	for (const struct coli_command *c = commands; c->name; c++)
		fprintf(f, "  %-10s %s\n", c->name, c->summary);
	fprintf(f, "\nRun 'coli COMMAND --help' for a command's options; see coli(1).\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return COLI_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return COLI_EXIT_OK;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
		printf("coli %s\n", PACKAGE_VERSION);
		return COLI_EXIT_OK;
	}
	for (const struct coli_command *c = commands; c->name; c++)
		if (!strcmp(c->name, argv[1]))
			return c->fn(argc - 1, argv + 1);
	fprintf(stderr, "coli: unknown command '%s' (see 'coli --help')\n", argv[1]);
	return COLI_EXIT_USAGE;
}
