/* grammar_test - the schema grammar on hand-written byte streams, and two
 * modes the fuzzer (tests/grammar_fuzz.sh) drives:
 *
 *   grammar_test                      unit cases (exit 0/1)
 *   grammar_test check SCHEMA.json    one document per stdin line -> "1"/"0"
 *   grammar_test walk SCHEMA.json N SEED
 *                                     N documents made by random walks that
 *                                     take only bytes the matcher allows,
 *                                     each ended by a NUL byte (a walk that
 *                                     cannot be completed prints "STUCK")
 *   grammar_test mask TOKENIZER.json SCHEMA.json PREFIX
 *                                     after PREFIX, check every token the
 *                                     mask allows by feeding its bytes, and
 *                                     every token it refuses likewise:
 *                                     prints "ok ALLOWED" or the first
 *                                     disagreement */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "grammar.h"
#include "grammar_impl.h"
#include "grammar_mask.h"
#include "test_util.h"

static coli_grammar *compile(const char *schema)
{
	coli_err err = { 0 };
	coli_grammar *g = NULL;
	if (grammar_compile_schema(schema, strlen(schema), "schema", &g, &err))
		printf("compile error: %s\n", err.msg);
	return g;
}

/* 1: the whole text is a complete document; 0: some byte was refused or
 * the document is unfinished; -1 on setup failure. */
static int doc_ok(coli_grammar *g, const char *doc, size_t len)
{
	grammar_matcher *m = NULL;
	coli_err err = { 0 };
	if (grammar_matcher_new(g, &m, &err))
		return -1;
	int ok = grammar_matcher_feed(m, (const uint8_t *)doc, len) == 0 && grammar_matcher_accepts(m);
	grammar_matcher_free(m);
	return ok;
}

/* 1: every byte of the (unfinished) text is taken. */
static int prefix_ok(coli_grammar *g, const char *doc)
{
	grammar_matcher *m = NULL;
	coli_err err = { 0 };
	if (grammar_matcher_new(g, &m, &err))
		return -1;
	int ok = grammar_matcher_feed(m, (const uint8_t *)doc, strlen(doc)) == 0;
	grammar_matcher_free(m);
	return ok;
}

/* Feed in pieces of `step` bytes (pieces that cross JSON tokens and split
 * UTF-8 characters): the result must not depend on the split. */
static int doc_ok_split(coli_grammar *g, const char *doc, size_t step)
{
	grammar_matcher *m = NULL;
	coli_err err = { 0 };
	if (grammar_matcher_new(g, &m, &err))
		return -1;
	size_t n = strlen(doc);
	int ok = 1;
	for (size_t i = 0; i < n && ok; i += step)
		ok = grammar_matcher_feed(m, (const uint8_t *)doc + i, i + step <= n ? step : n - i) == 0;
	ok = ok && grammar_matcher_accepts(m);
	grammar_matcher_free(m);
	return ok;
}

static void expect(const char *schema, const char *doc, int want)
{
	coli_grammar *g = compile(schema);
	CHECK(g, "compile %s", schema);
	if (!g)
		return;
	for (size_t step = 1; step <= 7; step++) {
		int got = doc_ok_split(g, doc, step);
		CHECK(got == want, "schema %s doc %s (pieces of %zu): got %d want %d", schema, doc, step, got, want);
	}
	grammar_free(g);
}

static void expect_error(const char *schema, const char *needle)
{
	coli_err err = { 0 };
	coli_grammar *g = NULL;
	int rc = grammar_compile_schema(schema, strlen(schema), "schema", &g, &err);
	CHECK(rc < 0 && strstr(err.msg, needle), "schema %s: want an error naming %s, got %d \"%s\"", schema,
	      needle, rc, err.msg);
	grammar_free(g);
}

static void unit(void)
{
	const char *person = "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},"
			     "\"age\":{\"type\":\"integer\"},\"tags\":{\"type\":\"array\",\"items\":{\"type\":"
			     "\"string\"},\"maxItems\":2}},\"required\":[\"name\",\"age\"],"
			     "\"additionalProperties\":false}";
	expect(person, "{\"name\":\"Ann\",\"age\":31}", 1);
	expect(person, "{\"age\":31,\"name\":\"Ann\"}", 1);               /* any order */
	expect(person, "{ \"name\": \"Ann\", \"age\": -4 }", 1);
	expect(person, "{\"name\":\"Ann\"}", 0);                          /* required */
	expect(person, "{\"name\":\"Ann\",\"age\":3.5}", 0);               /* integer */
	expect(person, "{\"name\":\"Ann\",\"age\":31,\"x\":1}", 0);        /* no extra keys */
	expect(person, "{\"name\":\"Ann\",\"name\":\"B\",\"age\":1}", 0);  /* duplicate */
	expect(person, "{\"name\":\"Ann\",\"age\":31,\"tags\":[\"a\",\"b\"]}", 1);
	expect(person, "{\"name\":\"Ann\",\"age\":31,\"tags\":[\"a\",\"b\",\"c\"]}", 0);
	expect(person, "{\"name\":\"Ann\",\"age\":031}", 0);               /* leading zero */
	expect(person, "{\"name\":\"Ann\",\"age\":31}   ", 0);             /* nothing after */
	expect(person, "{\"name\":   \"Ann\",\"age\":31}", 0);             /* whitespace bounded */
	/* UTF-8 split across pieces, escapes, and what JSON forbids */
	expect(person, "{\"name\":\"Zoë 漢字 \xF0\x9F\x98\x80\",\"age\":1}", 1);
	expect(person, "{\"name\":\"a\\n\\u00e9\\\"\",\"age\":1}", 1);
	expect(person, "{\"name\":\"\\ud800\",\"age\":1}", 0);             /* lone surrogate */
	expect(person, "{\"name\":\"\xC0\xAF\",\"age\":1}", 0);             /* overlong */
	expect(person, "{\"name\":\"\xED\xA0\x80\",\"age\":1}", 0);         /* UTF-8 surrogate */
	expect(person, "{\"name\":\"\xE6\xBC\",\"age\":1}", 0);             /* truncated */
	expect(person, "{\"name\":\"a\tb\",\"age\":1}", 0);                 /* raw control */
	const char *en = "{\"enum\":[\"red\",\"green\",1,12,null,[1,2]]}";
	expect(en, "\"red\"", 1);
	expect(en, "\"re\"", 0);
	expect(en, "12", 1);
	expect(en, "1", 1);
	expect(en, "123", 0);
	expect(en, "[1,2]", 1);
	expect(en, "null", 1);
	expect("{\"const\":{\"a\":[true]}}", "{\"a\":[true]}", 1);
	const char *any = "{\"anyOf\":[{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"}},"
			  "\"required\":[\"a\"],\"additionalProperties\":false},{\"type\":\"object\",\"properties\":"
			  "{\"b\":{\"type\":\"string\"}},\"required\":[\"b\"],\"additionalProperties\":false},"
			  "{\"type\":[\"number\",\"null\"]}]}";
	expect(any, "{\"a\":5}", 1);
	expect(any, "{\"b\":\"x\"}", 1);
	expect(any, "{\"a\":\"x\"}", 0);
	expect(any, "-1.5e+3", 1);
	expect(any, "null", 1);
	expect(any, "1.", 0);
	const char *ref = "{\"$defs\":{\"node\":{\"type\":\"object\",\"properties\":{\"v\":{\"type\":\"integer\"},"
			  "\"kids\":{\"type\":\"array\",\"items\":{\"$ref\":\"#/$defs/node\"}}},\"required\":[\"v\"],"
			  "\"additionalProperties\":false}},\"$ref\":\"#/$defs/node\"}";
	expect(ref, "{\"v\":1,\"kids\":[{\"v\":2},{\"v\":3,\"kids\":[]}]}", 1);
	expect(ref, "{\"v\":1,\"kids\":[{\"w\":2}]}", 0);
	const char *pre = "{\"type\":\"array\",\"prefixItems\":[{\"type\":\"string\"},{\"type\":\"boolean\"}],"
			  "\"items\":false,\"minItems\":1}";
	expect(pre, "[\"a\",true]", 1);
	expect(pre, "[\"a\"]", 1);
	expect(pre, "[]", 0);
	expect(pre, "[\"a\",true,1]", 0);
	const char *str = "{\"type\":\"string\",\"minLength\":2,\"maxLength\":3}";
	expect(str, "\"ab\"", 1);
	expect(str, "\"é漢\"", 1); /* code points, not bytes */
	expect(str, "\"a\"", 0);
	expect(str, "\"abcd\"", 0);
	expect("{\"type\":\"string\",\"pattern\":\"^[A-Z]{2}-[0-9]+$\"}", "\"AB-12\"", 1);
	expect("{\"type\":\"string\",\"pattern\":\"^[A-Z]{2}-[0-9]+$\"}", "\"AB-\"", 0);
	expect("{\"type\":\"string\",\"pattern\":\"b(c|d)\"}", "\"xxbdyy\"", 1); /* unanchored */
	expect("{\"type\":\"string\",\"pattern\":\"b(c|d)\"}", "\"xxbe\"", 0);
	expect("{\"type\":\"string\",\"format\":\"date\"}", "\"2024-02-28\"", 1);
	expect("{\"type\":\"string\",\"format\":\"date\"}", "\"2024-02-30\"", 0);
	expect("{\"type\":\"string\",\"format\":\"date-time\"}", "\"2024-12-01T15:04:05.25Z\"", 1);
	expect("{\"type\":\"string\",\"format\":\"uuid\"}", "\"123e4567-e89b-12d3-a456-426614174000\"", 1);
	expect("{\"type\":\"string\",\"format\":\"uuid\"}", "\"123e4567-e89b-12d3-a456-42661417400\"", 0);
	expect("{\"type\":\"object\",\"additionalProperties\":{\"type\":\"integer\"}}", "{\"x\":1,\"yy\":2}", 1);
	expect("{\"type\":\"object\",\"additionalProperties\":{\"type\":\"integer\"}}", "{\"x\":true}", 0);
	expect("{}", "[{\"a\":[1,\"b\",null,false]},-0.5]", 1);
	/* integer bounds, digit by digit */
	const char *rng = "{\"type\":\"integer\",\"minimum\":-5,\"maximum\":120}";
	expect(rng, "120", 1);
	expect(rng, "121", 0);
	expect(rng, "1200", 0);
	expect(rng, "-5", 1);
	expect(rng, "-6", 0);
	expect(rng, "-50", 0);
	expect(rng, "-0", 1);
	expect(rng, "99", 1);
	expect("{\"type\":\"integer\",\"exclusiveMinimum\":0,\"exclusiveMaximum\":10.5}", "0", 0);
	expect("{\"type\":\"integer\",\"exclusiveMinimum\":0,\"exclusiveMaximum\":10.5}", "10", 1);
	expect("{\"type\":\"integer\",\"minimum\":100}", "99", 0);
	expect("{\"type\":\"integer\",\"minimum\":100}", "100000", 1);
	/* zod's int(): the safe-integer range */
	expect("{\"type\":\"integer\",\"minimum\":-9007199254740991,\"maximum\":9007199254740991}", "-42", 1);
	/* unsupported input names the keyword or field */
	/* number bounds: exact on the decimal text; a bounded number is plain
	 * decimal of at most 15 digits in all */
	const char *unit01 = "{\"type\":\"number\",\"minimum\":0,\"maximum\":1}";
	expect(unit01, "0", 1);
	expect(unit01, "1", 1);
	expect(unit01, "0.5", 1);
	expect(unit01, "1.0", 1);
	expect(unit01, "1.00000000000001", 0);
	expect(unit01, "1.01", 0);
	expect(unit01, "-0", 1);
	expect(unit01, "-0.0", 1);
	expect(unit01, "-0.1", 0);
	expect(unit01, "0.99999999999999", 1);
	expect(unit01, "0.999999999999999", 0);   /* 16 digits */
	expect(unit01, "1e0", 0);                 /* no exponent */
	expect(unit01, "2", 0);
	expect(unit01, "10", 0);
	const char *open01 = "{\"type\":\"number\",\"exclusiveMinimum\":0,\"exclusiveMaximum\":1}";
	expect(open01, "0", 0);
	expect(open01, "0.0", 0);
	expect(open01, "0.00000000000001", 1);
	expect(open01, "0.99", 1);
	expect(open01, "1", 0);
	expect(open01, "-0", 0);
	const char *negr = "{\"type\":\"number\",\"minimum\":-2.5,\"maximum\":-2.25}";
	expect(negr, "-2.5", 1);
	expect(negr, "-2.25", 1);
	expect(negr, "-2.3", 1);
	expect(negr, "-2.2", 0);
	expect(negr, "-2.51", 0);
	expect(negr, "-2", 0);
	expect(negr, "-3", 0);
	expect(negr, "2.3", 0);
	const char *tenth = "{\"type\":\"number\",\"minimum\":0.1}";
	expect(tenth, "0.1", 1);
	expect(tenth, "0.09999", 0);
	expect(tenth, "0.10001", 1);
	expect(tenth, "100000", 1);
	expect(tenth, "123456789012345", 1);
	expect(tenth, "1234567890123456", 0);
	expect(tenth, "12345678901234.5", 1);
	expect(tenth, "12345678901234.56", 0);  /* 16 digits */
	/* a one-point range, in a type list, in an object (zod's .min().max()) */
	expect("{\"type\":[\"number\",\"null\"],\"minimum\":0.75,\"maximum\":0.75}", "0.75", 1);
	expect("{\"type\":[\"number\",\"null\"],\"minimum\":0.75,\"maximum\":0.75}", "0.750", 1);
	expect("{\"type\":[\"number\",\"null\"],\"minimum\":0.75,\"maximum\":0.75}", "0.7", 0);
	expect("{\"type\":[\"number\",\"null\"],\"minimum\":0.75,\"maximum\":0.75}", "null", 1);
	expect("{\"type\":\"object\",\"properties\":{\"p\":{\"type\":\"number\",\"minimum\":0,\"maximum\":1}},"
	       "\"required\":[\"p\"],\"additionalProperties\":false}", "{\"p\":0.25}", 1);
	expect("{\"type\":\"object\",\"properties\":{\"p\":{\"type\":\"number\",\"minimum\":0,\"maximum\":1}},"
	       "\"required\":[\"p\"],\"additionalProperties\":false}", "{\"p\":1.5}", 0);
	expect("{\"type\":\"number\",\"maximum\":1e300}", "-5.5", 1);   /* beyond 15 digits: no bound */
	expect_error("{\"type\":\"number\",\"minimum\":0.1234567890123456}", "minimum");
	expect_error("{\"type\":\"number\",\"exclusiveMaximum\":1e-16}", "exclusiveMaximum");
	expect_error("{\"type\":\"number\",\"minimum\":2,\"maximum\":1}", "no number");
	expect_error("{\"type\":\"number\",\"minimum\":1e300}", "no number");
	expect_error("{\"type\":\"number\",\"minimum\":\"3\"}", "minimum");
	expect_error("{\"type\":\"integer\",\"minimum\":3,\"maximum\":2}", "bounds");
	expect_error("{\"type\":\"integer\",\"multipleOf\":3}", "multipleOf");
	expect_error("{\"type\":\"object\",\"properties\":{\"a\":{\"not\":{}}}}", "properties.a: unsupported JSON Schema keyword \"not\"");
	expect_error("{\"type\":\"string\",\"pattern\":\"(?=a)\"}", "pattern");
	/* formats agent tools use: enforced, or annotations (issue 31) */
	expect("{\"type\":\"string\",\"format\":\"email\"}", "\"a.b@example.com\"", 1);
	expect("{\"type\":\"string\",\"format\":\"email\"}", "\"a.b@localhost\"", 0);
	expect("{\"type\":\"string\",\"format\":\"uri\"}", "\"https://example.com/a?b=1#c\"", 1);
	expect("{\"type\":\"string\",\"format\":\"uri\"}", "\"not a uri\"", 0);
	expect("{\"type\":\"string\",\"format\":\"uri\"}", "\"/relative\"", 0);
	expect("{\"type\":\"string\",\"format\":\"hostname\"}", "\"db-1.example.org\"", 1);
	expect("{\"type\":\"string\",\"format\":\"hostname\"}", "\"-bad.org\"", 0);
	expect("{\"type\":\"string\",\"format\":\"ipv4\"}", "\"192.168.0.255\"", 1);
	expect("{\"type\":\"string\",\"format\":\"ipv4\"}", "\"256.1.1.1\"", 0);
	expect("{\"type\":\"string\",\"format\":\"ipv6\"}", "\"fe80:0:0:0:1:2:3:abcd\"", 1);
	expect("{\"type\":\"string\",\"format\":\"ipv6\"}", "\"fe80::1:2\"", 0);
	expect("{\"type\":\"string\",\"format\":\"int64\"}", "\"anything\"", 1);
	expect("{\"type\":\"string\",\"format\":\"uri-reference\"}", "\"../x\"", 1);
	expect("{\"type\":\"string\",\"format\":\"uri\",\"maxLength\":4}", "\"abc\"", 1);
	expect_error("{\"type\":\"string\",\"format\":7}", "format");
	/* propertyNames (zod records), minProperties/maxProperties */
	expect("{\"type\":\"object\",\"propertyNames\":{\"type\":\"string\"},\"additionalProperties\":{\"type\":\"integer\"}}",
	       "{\"x\":1,\"y\":2}", 1);
	expect("{\"type\":\"object\",\"propertyNames\":{\"enum\":[\"a\",\"b\"]},\"additionalProperties\":{\"type\":\"integer\"}}",
	       "{\"b\":1}", 1);
	expect("{\"type\":\"object\",\"propertyNames\":{\"enum\":[\"a\",\"b\"]},\"additionalProperties\":{\"type\":\"integer\"}}",
	       "{\"c\":1}", 0);
	/* a key pattern or length: the declared or required keys that satisfy
	 * it, no other key */
#define PN_ENV "{\"type\":\"object\",\"propertyNames\":{\"type\":\"string\",\"pattern\":\"^[A-Z_]+$\"}," \
	"\"properties\":{\"HOME\":{\"type\":\"string\"},\"lower\":{}},\"required\":[\"PATH\"]," \
	"\"additionalProperties\":{\"type\":\"string\"}}"
	expect(PN_ENV, "{\"PATH\":\"/bin\",\"HOME\":\"/h\"}", 1);
	expect(PN_ENV, "{\"PATH\":\"/bin\"}", 1);
	expect(PN_ENV, "{\"PATH\":1}", 0);
	expect(PN_ENV, "{}", 0);
	expect(PN_ENV, "{\"PATH\":\"/bin\",\"lower\":1}", 0);
	expect(PN_ENV, "{\"PATH\":\"/bin\",\"OTHER\":\"x\"}", 0);
#undef PN_ENV
	expect("{\"type\":\"object\",\"propertyNames\":{\"pattern\":\"^a\"}}", "{}", 1);
	expect("{\"type\":\"object\",\"propertyNames\":{\"pattern\":\"^a\"}}", "{\"ab\":1}", 0);
	expect("{\"type\":\"object\",\"propertyNames\":{\"maxLength\":2},\"properties\":{\"\u00e9\u00e9\":{},"
	       "\"abc\":{}}}", "{\"\u00e9\u00e9\":1}", 1);
	expect("{\"type\":\"object\",\"propertyNames\":{\"maxLength\":2},\"properties\":{\"\u00e9\u00e9\":{},"
	       "\"abc\":{}}}", "{\"abc\":1}", 0);
	expect_error("{\"type\":\"object\",\"propertyNames\":{\"pattern\":\"^a\"},\"required\":[\"b\"]}",
		     "no document is valid");
	expect_error("{\"type\":\"object\",\"propertyNames\":{\"pattern\":\"(?<=a)\"},\"properties\":{\"a\":{}}}",
		     "propertyNames.pattern");
	expect_error("{\"type\":\"object\",\"propertyNames\":{\"minItems\":1}}", "propertyNames");
	expect("{\"type\":\"object\",\"properties\":{\"a\":{},\"b\":{}},\"additionalProperties\":false,"
	       "\"minProperties\":1,\"maxProperties\":1}", "{\"a\":1}", 1);
	expect("{\"type\":\"object\",\"properties\":{\"a\":{},\"b\":{}},\"additionalProperties\":false,"
	       "\"minProperties\":1,\"maxProperties\":1}", "{\"a\":1,\"b\":2}", 0);
	expect("{\"type\":\"object\",\"properties\":{\"a\":{},\"b\":{}},\"additionalProperties\":false,"
	       "\"minProperties\":1,\"maxProperties\":1}", "{}", 0);
	expect_error("{\"type\":\"object\",\"maxProperties\":1}", "maxProperties");
	/* anyOf beside other keywords, allOf, discriminator (MCP, Codex) */
	{
		const char *s2 = "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"},"
				 "\"b\":{\"type\":\"integer\"}},\"additionalProperties\":false,"
				 "\"anyOf\":[{\"required\":[\"a\"]},{\"required\":[\"b\"]}]}";
		expect(s2, "{\"a\":1}", 1);
		expect(s2, "{\"b\":2,\"a\":1}", 1);
		expect(s2, "{}", 0);
		expect(s2, "{\"c\":1}", 0);
		const char *s3 = "{\"allOf\":[{\"type\":\"object\",\"properties\":{\"x\":{\"type\":\"string\","
				 "\"maxLength\":3}},\"required\":[\"x\"]},{\"properties\":{\"y\":{\"type\":\"number\"}},"
				 "\"required\":[\"y\"]}],\"description\":\"both\"}";
		expect(s3, "{\"x\":\"ab\",\"y\":1.5}", 1);
		expect(s3, "{\"x\":\"ab\"}", 0);
		/* allOf with a closed side: the other side's extra key is out */
		const char *s4 = "{\"allOf\":[{\"type\":\"object\",\"properties\":{\"x\":{}},\"additionalProperties\":false},"
				 "{\"properties\":{\"y\":{}}}]}";
		expect(s4, "{\"x\":1}", 1);
		expect(s4, "{\"y\":1}", 0);
		expect("{\"allOf\":[{\"type\":[\"integer\",\"string\"]},{\"type\":\"number\"}]}", "3", 1);
		expect("{\"allOf\":[{\"type\":[\"integer\",\"string\"]},{\"type\":\"number\"}]}", "\"s\"", 0);
		expect_error("{\"allOf\":[{\"type\":\"string\"},{\"type\":\"number\"}]}", "types");
		expect_error("{\"allOf\":[{\"maxLength\":3},{\"maxLength\":4}]}", "maxLength");
		const char *s5 = "{\"oneOf\":[{\"$ref\":\"#/$defs/A\"},{\"$ref\":\"#/$defs/B\"}],\"discriminator\":"
				 "{\"propertyName\":\"k\"},\"$defs\":{\"A\":{\"type\":\"object\",\"properties\":{\"k\":"
				 "{\"const\":\"a\"}},\"required\":[\"k\"]},\"B\":{\"type\":\"object\",\"properties\":"
				 "{\"k\":{\"const\":\"b\"}},\"required\":[\"k\"]}}}";
		expect(s5, "{\"k\":\"b\"}", 1);
		expect(s5, "{\"k\":\"c\"}", 0);
	}
	expect_error("{\"$ref\":\"http://x/y\"}", "$ref");
	expect_error("{\"type\":\"strin\"}", "type");
	expect_error("{\"type\":", "invalid JSON");
	expect_error("{\"$ref\":\"#\"}", "cycle");
	expect_error("{\"type\":\"array\",\"minItems\":3,\"maxItems\":1}", "minItems");
	/* no finite document: every array must hold another array (issue 30,
	 * defect 7: used to generate '[' until the token budget ran out) */
	expect_error("{\"type\":\"array\",\"items\":{\"$ref\":\"#\"},\"minItems\":1}", "no finite document");
	expect_error("{\"type\":\"object\",\"properties\":{\"a\":{\"$ref\":\"#\"}},\"required\":[\"a\"]}",
		     "no finite document");
	expect_error("{\"$defs\":{\"x\":{\"type\":\"array\",\"prefixItems\":[{\"$ref\":\"#/$defs/y\"}],"
		     "\"minItems\":1},\"y\":{\"anyOf\":[{\"$ref\":\"#/$defs/x\"}]}},\"$ref\":\"#/$defs/x\"}",
		     "no finite document");
	/* productive, with dead ends cut: the optional property "a" cannot take
	 * a value, so its key is refused; an array of them ends before one */
	const char *opt = "{\"$defs\":{\"inf\":{\"type\":\"array\",\"items\":{\"$ref\":\"#/$defs/inf\"},"
			  "\"minItems\":1}},\"type\":\"object\",\"properties\":{\"a\":{\"$ref\":\"#/$defs/inf\"},"
			  "\"b\":{\"type\":\"array\",\"items\":{\"$ref\":\"#/$defs/inf\"}}},"
			  "\"additionalProperties\":false}";
	expect(opt, "{}", 1);
	expect(opt, "{\"b\":[]}", 1);
	coli_grammar *g = compile(opt);
	CHECK(g, "compile the schema with dead ends");
	if (g) {
		CHECK(prefix_ok(g, "{\"b\":[") == 1, "a prefix that can finish is taken");
		CHECK(prefix_ok(g, "{\"a\"") == 0, "the key of a property no value satisfies is refused");
		CHECK(prefix_ok(g, "{\"b\":[[") == 0, "an item no value satisfies is refused");
		grammar_free(g);
	}
	expect("{\"anyOf\":[{\"type\":\"array\",\"items\":{\"$ref\":\"#\"},\"minItems\":1},{\"type\":\"null\"}]}",
	       "[[null]]", 1);
	/* a schema nested too deep: the reason survives a long path (issue 30,
	 * defect 11: the path filled the message) */
	static char deep[64 * 1024];
	for (int form = 0; form < 2; form++) {
		size_t n = 0;
		for (int i = 0; i < 300; i++)
			n += (size_t)snprintf(deep + n, sizeof deep - n, form ? "{\"properties\":{\"p%03d_%s\":" :
					      "{\"type\":\"array\",\"items\":", i, "abcdefghijklmnopqrstuvwxyz");
		n += (size_t)snprintf(deep + n, sizeof deep - n, "{}");
		for (int i = 0; i < 300; i++)
			n += (size_t)snprintf(deep + n, sizeof deep - n, form ? "}}" : "}");
		coli_err err = { 0 };
		coli_grammar *dg = NULL;
		int rc = grammar_compile_schema(deep, n, "schema", &dg, &err);
		CHECK(rc < 0 && strstr(err.msg, "schema nested too deeply") && !strncmp(err.msg, "schema.", 7) &&
		      strlen(err.msg) < 300, "deep schema (%s): got %d \"%s\"", form ? "properties" : "items", rc,
		      err.msg);
		grammar_free(dg);
	}
}

/* The bytes allowed after the current state. */
static int allowed_bytes(grammar_matcher *m, int *out)
{
	grammar_state s;
	int n = 0;
	for (int c = 0; c < 256; c++) {
		size_t mark = grammar_scratch_mark(m);
		if (grammar_advance(m, grammar_matcher_state(m), c, &s))
			out[n++] = c;
		grammar_scratch_release(m, mark);
	}
	return n;
}

static uint64_t rnd(void)
{
	test_rng ^= test_rng << 13;
	test_rng ^= test_rng >> 7;
	test_rng ^= test_rng << 17;
	return test_rng;
}

/* A random walk over allowed bytes; past `soft` bytes it prefers to end
 * (closing bytes, the end of the document). */
static int walk(coli_grammar *g, size_t soft, char *doc, size_t cap)
{
	grammar_matcher *m = NULL;
	coli_err err = { 0 };
	if (grammar_matcher_new(g, &m, &err))
		return -1;
	size_t n = 0;
	int ok = 0, allowed[256];
	while (n + 1 < cap) {
		int late = n > soft;
		if (grammar_matcher_accepts(m) && (late || rnd() % 8 == 0 || !grammar_matcher_can_continue(m))) {
			ok = 1;
			break;
		}
		int k = allowed_bytes(m, allowed);
		if (!k)
			break;
		int c = allowed[rnd() % (uint64_t)k];
		if (late) {
			/* towards the end: the bytes that leave the shallowest stack */
			int best = 1 << 30, ties[256], nt = 0;
			for (int i = 0; i < k; i++) {
				grammar_state st;
				size_t mark = grammar_scratch_mark(m);
				grammar_advance(m, grammar_matcher_state(m), allowed[i], &st);
				int d = 1 << 30;
				for (int j = 0; j < st.n; j++)
					d = st.top[j]->depth < d ? st.top[j]->depth : d;
				grammar_scratch_release(m, mark);
				if (d < best)
					best = d, nt = 0;
				if (d == best)
					ties[nt++] = allowed[i];
			}
			/* prefer a small alphabet: patterns complete sooner */
			int small[256], ns = 0;
			for (int i = 0; i < nt; i++)
				if (strchr("abcdefghijklmnopqrstuvwxyz0123456789\"}]-:", ties[i]) && ties[i])
					small[ns++] = ties[i];
			c = ns ? small[rnd() % (uint64_t)ns] : ties[rnd() % (uint64_t)nt];
		} else if (rnd() % 3) {
			/* mostly printable ASCII, so walks stay readable */
			int a[256], na = 0;
			for (int i = 0; i < k; i++)
				if (allowed[i] >= 0x20 && allowed[i] < 0x7f)
					a[na++] = allowed[i];
			if (na)
				c = a[rnd() % (uint64_t)na];
		}
		uint8_t b = (uint8_t)c;
		if (grammar_matcher_feed(m, &b, 1))
			break;
		doc[n++] = (char)c;
	}
	doc[n] = 0;
	grammar_matcher_free(m);
	return ok;
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	char *buf = malloc(1 << 20);
	size_t n = buf ? fread(buf, 1, (1 << 20) - 1, f) : 0;
	fclose(f);
	if (buf)
		buf[n] = 0;
	*len = n;
	return buf;
}

static int mode_check(const char *path)
{
	size_t len;
	char *s = slurp(path, &len);
	coli_grammar *g = s ? compile(s) : NULL;
	free(s);
	if (!g)
		return 2;
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	while ((n = getline(&line, &cap, stdin)) > 0) {
		if (line[n - 1] == '\n')
			line[--n] = 0;
		printf("%d\n", doc_ok(g, line, (size_t)n));
	}
	free(line);
	grammar_free(g);
	return 0;
}

static int mode_walk(const char *path, int count, uint64_t seed)
{
	size_t len;
	char *s = slurp(path, &len);
	coli_grammar *g = s ? compile(s) : NULL;
	free(s);
	if (!g)
		return 2;
	test_rng = seed * 2654435761u + 1;
	static char doc[1 << 16];
	for (int i = 0; i < count; i++) {
		int ok = walk(g, 200, doc, sizeof doc);
		if (ok == 1)
			printf("%s%c", doc, 0);
		else
			printf("STUCK %.300s%c", doc, 0);
	}
	grammar_free(g);
	return 0;
}

/* Mask vs byte-by-byte feeding for every token of a real tokenizer. */
static int mode_mask(const char *tok_path, const char *schema_path, const char *prefix)
{
	coli_tokenizer *t = NULL;
	coli_err err = { 0 };
	if (coli_tokenizer_load(tok_path, &t, &err)) {
		printf("%s\n", err.msg);
		return 2;
	}
	size_t len;
	char *s = slurp(schema_path, &len);
	coli_grammar *g = s ? compile(s) : NULL;
	free(s);
	grammar_vocab *v = NULL;
	grammar_matcher *m = NULL, *probe = NULL;
	int V = coli_tokenizer_vocab_size(t), eos = coli_tokenizer_eos_id(t), rc = 2;
	uint64_t *mask = calloc((size_t)(V + 63) / 64, sizeof *mask);
	if (!g || !mask || grammar_vocab_new(t, V, &eos, 1, &v, &err) || grammar_matcher_new(g, &m, &err) ||
	    grammar_matcher_new(g, &probe, &err))
		goto out;
	if (grammar_matcher_feed(m, (const uint8_t *)prefix, strlen(prefix))) {
		printf("prefix refused\n");
		goto out;
	}
	int allowed = grammar_mask_compute(v, m, mask);
	rc = 0;
	for (int id = 0; id < V && !rc; id++) {
		size_t n = 0;
		const uint8_t *b = coli_tokenizer_token_bytes(t, id, &n);
		int want;
		if (id == eos) {
			want = grammar_matcher_accepts(m);
		} else if (!b || !n) {
			want = 0;
		} else {
			grammar_matcher_reset(probe);
			want = !grammar_matcher_feed(probe, (const uint8_t *)prefix, strlen(prefix)) &&
			       !grammar_matcher_feed(probe, b, n);
		}
		int got = (int)(mask[id >> 6] >> (id & 63)) & 1;
		if (got != want) {
			printf("token %d: mask %d, feeding %d\n", id, got, want);
			rc = 1;
		}
	}
	if (!rc)
		printf("ok %d\n", allowed);
out:
	free(mask);
	grammar_matcher_free(m);
	grammar_matcher_free(probe);
	grammar_vocab_free(v);
	grammar_free(g);
	coli_tokenizer_free(t);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "check"))
		return mode_check(argv[2]);
	if (argc == 5 && !strcmp(argv[1], "walk"))
		return mode_walk(argv[2], atoi(argv[3]), strtoull(argv[4], NULL, 10));
	if (argc == 5 && !strcmp(argv[1], "mask"))
		return mode_mask(argv[2], argv[3], argv[4]);
	unit();
	return test_summary(__FILE__);
}
