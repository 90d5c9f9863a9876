/* Structured output is compiled by the thread that submits, never by the
 * engine thread (issue 28): grammar_compile_count() counts compilations
 * in the whole process, so a count that does not move between the return
 * of coli_engine_submit and the request's DONE shows that admission and
 * decoding compiled nothing.
 *  - a compiled grammar handed to submit is not compiled again, and the
 *    caller may free its reference at once (the request holds its own;
 *    ASan would see a use after free);
 *  - schema text is compiled inside coli_engine_submit, on the caller's
 *    thread, and may be freed right after it returns: same greedy answer
 *    as the compiled grammar;
 *  - json_object is compiled at submit too;
 *  - one grammar shared by two requests decoded together gives each the
 *    answer it gets alone;
 *  - a bad schema fails the submit (-EINVAL naming the keyword), not the
 *    request later.
 * Usage: engine_grammar_submit MODEL_DIR CACHE_DIR */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "grammar.h"
#include "engine_test.h"
#include "test_util.h"

static const char schema[] =
	"{\"type\":\"object\",\"properties\":{\"mood\":{\"enum\":[\"calm\",\"busy\"]},"
	"\"n\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":9},"
	"\"name\":{\"type\":\"string\",\"pattern\":\"^[a-z]{1,6}$\"}},"
	"\"required\":[\"mood\",\"n\",\"name\"],\"additionalProperties\":false}";

static const int prompt[] = { 1, 17, 33, 49, 65 };

/* Submit with p, check the compile count moved by `compiled` during the
 * submit and not at all afterwards, read the answer into buf. */
static int run(coli_engine *e, coli_gen_params *p, unsigned long compiled, char *buf, size_t cap, const char *what)
{
	coli_err err = { 0 };
	coli_request *r = NULL;
	const unsigned long before = grammar_compile_count();
	int rc = coli_engine_submit(e, prompt, 5, p, &r, &err);
	CHECK(rc == 0, "%s: submit: %s", what, err.msg);
	if (rc)
		return -1;
	const unsigned long at_submit = grammar_compile_count();
	CHECK(at_submit - before == compiled, "%s: %lu compilations in submit, want %lu", what,
	      at_submit - before, compiled);
	coli_event last;
	rc = test_drain_text(r, buf, cap, &last);
	CHECK(rc == 0, "%s: the request never ended", what);
	CHECK(last.kind == COLI_EV_DONE, "%s: ended with kind %d (%s)", what, last.kind, last.message);
	CHECK(grammar_compile_count() == at_submit, "%s: %lu compilations after submit (the engine thread)", what,
	      grammar_compile_count() - at_submit);
	coli_request_free(r);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: %s MODEL_DIR CACHE_DIR\n", argv[0]);
		return 2;
	}
	coli_engine_opts o;
	coli_engine_opts_default(&o);
	o.model_dir = argv[1];
	o.cache_dir = argv[2];
	o.parallel = 2;
	o.ctx = 1024;
	o.threads = 1;
	o.no_heat = 1;
	coli_err err = { 0 };
	coli_engine *e = NULL;
	REQUIRE(coli_engine_new(&o, &e, &err) == 0, "engine: %s", err.msg);
	static char a[4096], b[4096], c[4096], s1[4096], s2[4096];
	coli_gen_params p;
	coli_gen_params_default(&p);
	p.max_tokens = 96;

	/* a compiled grammar: its caller's reference dropped at once */
	coli_grammar *g = NULL;
	REQUIRE(grammar_compile_schema(schema, strlen(schema), "schema", &g, &err) == 0, "compile: %s", err.msg);
	{
		coli_request *r = NULL;
		p.grammar = g;
		const unsigned long before = grammar_compile_count();
		REQUIRE(coli_engine_submit(e, prompt, 5, &p, &r, &err) == 0, "submit: %s", err.msg);
		grammar_free(g);
		g = NULL;
		CHECK(grammar_compile_count() == before, "a compiled grammar was compiled again at submit");
		coli_event last;
		CHECK(test_drain_text(r, a, sizeof a, &last) == 0 && last.kind == COLI_EV_DONE, "grammar: %s", last.message);
		CHECK(grammar_compile_count() == before, "the engine thread compiled a grammar");
		coli_request_free(r);
		p.grammar = NULL;
	}
	CHECK(a[0] == '{' && strstr(a, "\"mood\"") && strchr(a, '}'), "a document under the schema: %s", a);

	/* schema text, compiled in submit, freed right after it */
	char *text = strdup(schema);
	REQUIRE(text != NULL);
	p.json_schema = text;
	{
		coli_request *r = NULL;
		const unsigned long before = grammar_compile_count();
		REQUIRE(coli_engine_submit(e, prompt, 5, &p, &r, &err) == 0, "submit text: %s", err.msg);
		const unsigned long at_submit = grammar_compile_count();
		CHECK(at_submit == before + 1, "schema text compiled %lu times in submit, want 1", at_submit - before);
		memset(text, 'x', strlen(text));
		free(text);
		p.json_schema = NULL;
		coli_event last;
		CHECK(test_drain_text(r, b, sizeof b, &last) == 0 && last.kind == COLI_EV_DONE, "text: %s", last.message);
		CHECK(grammar_compile_count() == at_submit, "the engine thread compiled the schema");
		coli_request_free(r);
	}
	CHECK_STR(b, a);

	/* any JSON object: compiled at submit as well */
	p.json_object = 1;
	run(e, &p, 1, c, sizeof c, "json_object");
	CHECK(c[0] == '{', "json_object: an object: %s", c);
	p.json_object = 0;

	/* one grammar, two requests decoded together */
	REQUIRE(grammar_compile_schema(schema, strlen(schema), "schema", &g, &err) == 0, "compile: %s", err.msg);
	p.grammar = g;
	{
		coli_request *r1 = NULL, *r2 = NULL;
		const unsigned long before = grammar_compile_count();
		REQUIRE(coli_engine_submit(e, prompt, 5, &p, &r1, &err) == 0, "submit 1: %s", err.msg);
		REQUIRE(coli_engine_submit(e, prompt, 5, &p, &r2, &err) == 0, "submit 2: %s", err.msg);
		grammar_free(g);
		coli_event l1, l2;
		CHECK(test_drain_text(r1, s1, sizeof s1, &l1) == 0 && l1.kind == COLI_EV_DONE, "shared 1: %s", l1.message);
		CHECK(test_drain_text(r2, s2, sizeof s2, &l2) == 0 && l2.kind == COLI_EV_DONE, "shared 2: %s", l2.message);
		CHECK(grammar_compile_count() == before, "shared: %lu compilations", grammar_compile_count() - before);
		coli_request_free(r1);
		coli_request_free(r2);
	}
	CHECK_STR(s1, a);
	CHECK_STR(s2, a);
	p.grammar = NULL;

	/* a bad schema fails the submit, naming the keyword */
	p.json_schema = "{\"type\":\"integer\",\"multipleOf\":3}";
	{
		coli_request *r = NULL;
		coli_err bad = { 0 };
		CHECK_RC(coli_engine_submit(e, prompt, 5, &p, &r, &bad), -EINVAL);
		CHECK(strstr(bad.msg, "multipleOf") != NULL, "message: %s", bad.msg);
		CHECK(r == NULL);
	}
	coli_engine_free(e);
	return test_summary(argv[0]);
}
