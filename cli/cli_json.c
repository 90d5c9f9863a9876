/* cli_json.c - see cli_json.h. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_json.h"
#include "grammar.h"
#include "util_buf.h"

const char cli_json_flags_help[] =
	"  --json              answer with one JSON object (constrained decoding)\n"
	"  --json-schema FILE  answer with a JSON document valid under the schema in FILE\n";

static int read_all(const char *path, char **out, coli_err *err)
{
	int rc = util_buf_read_path(path, 1u << 24, out, NULL);
	if (rc == -EFBIG)
		return coli_err_set(err, rc, "--json-schema %s: larger than 16 MiB", path);
	if (rc == -EIO)
		return coli_err_set(err, rc, "--json-schema %s: read error", path);
	if (rc == -ENOMEM)
		return coli_err_set(err, rc, "out of memory");
	if (rc)
		return coli_err_set(err, rc, "--json-schema %s: cannot open", path);
	return 0;
}

int cli_json_flags_parse(cli_json_flags *f, coli_gen_params *p, int argc, char **argv, int *i, coli_err *err)
{
	const char *a = argv[*i];
	if (!strcmp(a, "--json")) {
		p->json_object = 1;
		return 1;
	}
	if (strcmp(a, "--json-schema"))
		return 0;
	if (*i + 1 >= argc)
		return coli_err_set(err, -EINVAL, "--json-schema needs a file");
	const char *path = argv[++*i];
	free(f->schema);
	f->schema = NULL;
	int rc = read_all(path, &f->schema, err);
	if (rc)
		return rc;
	/* compiled once, here: a bad schema is a usage error naming it, and
	 * the engine gets the grammar */
	char what[600];
	snprintf(what, sizeof what, "--json-schema %s", path);
	grammar_free(f->grammar);
	f->grammar = NULL;
	rc = grammar_compile_schema(f->schema, strlen(f->schema), what, &f->grammar, err);
	if (rc)
		return rc;
	p->grammar = f->grammar;
	p->json_schema = f->schema;
	return 1;
}

void cli_json_flags_free(cli_json_flags *f)
{
	free(f->schema);
	f->schema = NULL;
	grammar_free(f->grammar);
	f->grammar = NULL;
}
