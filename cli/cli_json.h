/* cli_json.h - the structured-output flags of `coli generate` and `coli
 * chat`: --json (any JSON object) and --json-schema FILE. */
#ifndef COLI_CLI_JSON_H
#define COLI_CLI_JSON_H

#include "coli_err.h"
#include "engine.h"

typedef struct cli_json_flags {
	char *schema;  /* the schema file's text (owned) */
	struct coli_grammar *grammar; /* ... compiled (a reference, grammar.h) */
} cli_json_flags;

/* Same convention as coli_gen_flags_parse: 1 consumed, 0 not ours,
 * negative on a bad value (an unreadable file, an invalid or unsupported
 * schema: the message names the file and the keyword). Sets p->json_object,
 * or p->grammar and p->json_schema (pointing into f): the schema is
 * compiled here, once, and the engine takes the compiled grammar. */
int cli_json_flags_parse(cli_json_flags *f, coli_gen_params *p, int argc, char **argv, int *i, coli_err *err);
void cli_json_flags_free(cli_json_flags *f);
extern const char cli_json_flags_help[];

#endif
