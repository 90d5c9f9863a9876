/* compare_test.c - the pure parts of `coli compare`: JSON extraction from
 * model answers, the path-by-path diff on hand-written pairs, the SSE
 * decoder, /metrics parsing, base URLs, prompt files and the four output
 * formats. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "compare.h"
#include "test_util.h"

/* ---- extraction ---- */

static int extracts_to(const char *text, const char *want)
{
	json_t *j = cmp_json_extract(text, strlen(text));
	json_t *w = json_loads(want, 0, NULL);
	int ok = j && w && json_equal(j, w);
	if (!ok)
		fprintf(stderr, "extract(%s) wrong\n", text);
	json_decref(j);
	json_decref(w);
	return ok;
}

static void test_extract(void)
{
	CHECK(extracts_to("{\"a\": 1}", "{\"a\":1}"));
	CHECK(extracts_to("  [1, 2]\n", "[1,2]"));
	CHECK(extracts_to("Here you go:\n```json\n{\"name\": \"x\"}\n```\nDone.", "{\"name\":\"x\"}"));
	CHECK(extracts_to("```\n{\"n\": 2}\n```", "{\"n\":2}"));
	CHECK(extracts_to("```JSON\n[{\"a\":true}]\n```", "[{\"a\":true}]"));
	/* a first fence without JSON, the second has it */
	CHECK(extracts_to("```sh\nls -l\n```\n```json\n{\"k\":1}\n```", "{\"k\":1}"));
	CHECK(extracts_to("The answer is {\"city\": \"Oslo\", \"n\": {\"x\": [1]}} as asked.",
			  "{\"city\":\"Oslo\",\"n\":{\"x\":[1]}}"));
	CHECK(cmp_json_extract("no json here", 12) == NULL);
	CHECK(cmp_json_extract("42", 2) == NULL);
	CHECK(cmp_json_extract("{\"a\": ", 6) == NULL);
	CHECK(cmp_json_extract("```json\n{\"a\": 1\n", 17) == NULL);
}

/* ---- diff ---- */

typedef struct want {
	const char *path;
	int kind;
	const char *local, *remote;
} want;

static cmp_fields fields;

static void diff_case(const char *l, const char *r, const want *w, int nw, int leaves, int agree)
{
	json_t *lj = json_loads(l, JSON_DECODE_ANY, NULL), *rj = json_loads(r, JSON_DECODE_ANY, NULL);
	cmp_diff *d = NULL;
	int n = 0;
	cmp_fields fs = { 0 };
	CHECK(lj && rj);
	CHECK(cmp_json_diff(lj, rj, &d, &n, cmp_fields_note, &fs) == 0);
	int ok = n == nw;
	for (int i = 0; ok && i < n; i++) {
		ok = !strcmp(d[i].path, w[i].path) && d[i].kind == w[i].kind &&
		     ((!d[i].local && !w[i].local) || (d[i].local && w[i].local && !strcmp(d[i].local, w[i].local))) &&
		     ((!d[i].remote && !w[i].remote) ||
		      (d[i].remote && w[i].remote && !strcmp(d[i].remote, w[i].remote)));
	}
	int nl = 0, na = 0;
	for (int i = 0; i < fs.n; i++) {
		nl += fs.f[i].total;
		na += fs.f[i].agree;
	}
	if (!ok || nl != leaves || na != agree) {
		fprintf(stderr, "diff(%s, %s): %d entries, %d leaves (%d agree):\n", l, r, n, nl, na);
		for (int i = 0; i < n; i++)
			fprintf(stderr, "  %s %d %s %s\n", d[i].path, d[i].kind, d[i].local ? d[i].local : "-",
				d[i].remote ? d[i].remote : "-");
		FAIL("diff(%s, %s) differs from the expected entries (above)", l, r);
	}
	/* also tally into the run-wide summary */
	for (int i = 0; i < fs.n; i++)
		for (int k = 0; k < fs.f[i].total; k++)
			cmp_fields_note(&fields, fs.f[i].path, k < fs.f[i].agree);
	cmp_fields_free(&fs);
	cmp_diffs_free(d, n);
	json_decref(lj);
	json_decref(rj);
}

static void test_diff(void)
{
	/* equal, with numbers written differently */
	diff_case("{\"a\":1,\"b\":[1.0,2]}", "{\"b\":[1,2.0],\"a\":1.0}", NULL, 0, 3, 3);
	/* changed scalar, missing key (remote only), extra key (local only) */
	{
		want w[] = { { "$.name", CMP_DIFF_CHANGED, "\"Ann\"", "\"Anna\"" },
			     { "$.age", CMP_DIFF_MISSING, NULL, "31" },
			     { "$.nick", CMP_DIFF_EXTRA, "\"A\"", NULL } };
		diff_case("{\"name\":\"Ann\",\"nick\":\"A\",\"city\":\"Oslo\"}",
			  "{\"name\":\"Anna\",\"age\":31,\"city\":\"Oslo\"}", w, 3, 4, 1);
	}
	/* type changes: "1" vs 1, null vs 0, object vs scalar, true vs 1 */
	{
		want w[] = { { "$.a", CMP_DIFF_CHANGED, "\"1\"", "1" },
			     { "$.b", CMP_DIFF_CHANGED, "null", "0" },
			     { "$.c", CMP_DIFF_CHANGED, "{\"x\":1}", "2" },
			     { "$.d", CMP_DIFF_CHANGED, "true", "1" } };
		diff_case("{\"a\":\"1\",\"b\":null,\"c\":{\"x\":1},\"d\":true}",
			  "{\"a\":1,\"b\":0,\"c\":2,\"d\":1}", w, 4, 4, 0);
	}
	/* arrays by index: longer remote -> missing elements, nested paths */
	{
		want w[] = { { "$.items[0].qty", CMP_DIFF_CHANGED, "2", "3" },
			     { "$.items[1].sku", CMP_DIFF_MISSING, NULL, "\"B\"" },
			     { "$.items[1].qty", CMP_DIFF_MISSING, NULL, "1" } };
		diff_case("{\"items\":[{\"sku\":\"A\",\"qty\":2}]}",
			  "{\"items\":[{\"sku\":\"A\",\"qty\":3},{\"sku\":\"B\",\"qty\":1}]}", w, 3, 4, 1);
	}
	/* odd keys are quoted; empty containers are leaves */
	{
		want w[] = { { "$[\"first name\"]", CMP_DIFF_CHANGED, "\"a\"", "\"b\"" },
			     { "$.tags", CMP_DIFF_CHANGED, "[]", "[\"x\"]" } };
		diff_case("{\"first name\":\"a\",\"tags\":[],\"meta\":{}}",
			  "{\"first name\":\"b\",\"tags\":[\"x\"],\"meta\":{}}", w, 2, 3, 1);
	}
	/* top-level arrays and a scalar root mismatch */
	{
		want w[] = { { "$[2]", CMP_DIFF_EXTRA, "3", NULL } };
		diff_case("[1,2,3]", "[1,2]", w, 1, 3, 2);
	}
	/* the run-wide tally: $.city agreed once, $.name twice compared */
	int found = 0;
	for (int i = 0; i < fields.n; i++)
		if (!strcmp(fields.f[i].path, "$.city")) {
			CHECK(fields.f[i].agree == 1 && fields.f[i].total == 1);
			found = 1;
		}
	CHECK(found);
}

/* ---- SSE ---- */

static int sse_run(const char *stream, size_t chunk, cmp_result *r)
{
	cmp_sse *s = calloc(1, sizeof *s);
	memset(r, 0, sizeof *r);
	r->ttft_s = -1;
	s->r = r;
	int rc = 0;
	size_t n = strlen(stream);
	for (size_t i = 0; i < n && !rc; i += chunk)
		rc = cmp_sse_feed(s, stream + i, i + chunk < n ? chunk : n - i, 1.0 + (double)i);
	if (!rc && !s->done)
		rc = 1;
	free(s);
	return rc;
}

static void test_sse(void)
{
	const char *good =
		": keepalive\r\n\r\n"
		"data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"}}]}\n\n"
		"event: message\nid: 7\n"
		"data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"H\\u00e9\"}}]}\n\n"
		"data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"llo\"},\"finish_reason\":\"stop\"}]}\n\n"
		"data: {\"id\":\"c\",\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":2}}\n\n"
		"data: [DONE]\n\n";
	for (size_t chunk = 1; chunk <= 64; chunk *= 4) {
		cmp_result r;
		CHECK(sse_run(good, chunk, &r) == 0);
		CHECK(r.text.p && !strcmp(r.text.p, "H\xc3\xa9llo"));
		CHECK(r.usage_valid && r.prompt_tokens == 5 && r.completion_tokens == 2);
		CHECK(r.ttft_s > 0);
		cmp_result_free(&r);
	}
	cmp_result r;
	CHECK(sse_run("data: {not json\n\n", 8, &r) < 0 && strstr(r.error, "not a JSON object"));
	cmp_result_free(&r);
	CHECK(sse_run("hello there\n", 8, &r) < 0 && strstr(r.error, "unexpected line"));
	cmp_result_free(&r);
	CHECK(sse_run("data: [DONE]\n\ndata: {}\n\n", 8, &r) < 0 && strstr(r.error, "after [DONE]"));
	cmp_result_free(&r);
	CHECK(sse_run("data: {\"error\":{\"message\":\"boom\"}}\n\n", 8, &r) < 0 &&
	      strstr(r.error, "boom"));
	cmp_result_free(&r);
	/* no [DONE]: the caller reports a disconnect */
	CHECK(sse_run("data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\n", 8, &r) == 1);
	cmp_result_free(&r);
}

/* ---- metrics, URLs ---- */

static void test_metrics_urls(void)
{
	cmp_xstats x;
	cmp_xstats_parse("# HELP coli_expert_hits_total x\n"
			 "coli_expert_hits_total{tier=\"pinned\"} 10\n"
			 "coli_expert_hits_total{tier=\"cached\"} 5\n"
			 "coli_expert_hits_total_other 99\n"
			 "coli_expert_misses_total 3\n"
			 "coli_expert_bytes_read_total 1.5e+06\n", &x);
	CHECK(x.valid && x.hits == 15 && x.misses == 3 && x.bytes == 1.5e6);
	cmp_xstats_parse("coli_expert_hits_total 1\n", &x);
	CHECK(!x.valid);

	char b[256];
	coli_err err = { 0 };
	CHECK(!cmp_base_url("http://127.0.0.1:8080", b, sizeof b, &err) && !strcmp(b, "http://127.0.0.1:8080/v1"));
	CHECK(!cmp_base_url("http://h:1/", b, sizeof b, &err) && !strcmp(b, "http://h:1/v1"));
	CHECK(!cmp_base_url("https://h/v1/", b, sizeof b, &err) && !strcmp(b, "https://h/v1"));
	CHECK(!cmp_base_url("https://api.x.com/openai/v1", b, sizeof b, &err) &&
	      !strcmp(b, "https://api.x.com/openai/v1"));
	CHECK(!cmp_base_url("https://g.com/v1beta/openai/", b, sizeof b, &err) &&
	      !strcmp(b, "https://g.com/v1beta/openai"));
	CHECK(cmp_base_url("ftp://h", b, sizeof b, &err) < 0 && strstr(err.msg, "ftp://h"));
}

/* ---- prompts ---- */

static char *write_tmp(const char *text)
{
	char *p = strdup("/tmp/compare_test.XXXXXX");
	int fd = mkstemp(p);
	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		abort();
	close(fd);
	return p;
}

static void test_prompts(void)
{
	coli_err err = { 0 };
	cmp_prompts ps;
	char *p = write_tmp("What is 2+2?\n\n{\"not\": \"jsonl, since line 1 is text\"}\n");
	CHECK(!cmp_prompts_read(p, &ps, &err) && ps.n == 2);
	CHECK(ps.n == 2 && !strcmp(ps.p[0].id, "1") && !strcmp(ps.p[1].id, "3"));
	CHECK(ps.n == 2 && !strcmp(ps.p[0].messages, "[{\"role\":\"user\",\"content\":\"What is 2+2?\"}]"));
	cmp_prompts_free(&ps);
	unlink(p);
	free(p);
	p = write_tmp("{\"id\":\"inv-1\",\"prompt\":\"Extract\",\"system\":\"JSON only\","
		      "\"response_format\":{\"type\":\"json_object\"}}\n"
		      "{\"id\":7,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}\n");
	CHECK(!cmp_prompts_read(p, &ps, &err) && ps.n == 2);
	if (ps.n == 2) {
		CHECK(!strcmp(ps.p[0].id, "inv-1") && !strcmp(ps.p[1].id, "7"));
		CHECK(!strcmp(ps.p[0].messages, "[{\"role\":\"system\",\"content\":\"JSON only\"},"
						 "{\"role\":\"user\",\"content\":\"Extract\"}]"));
		CHECK(ps.p[0].response_format && !strcmp(ps.p[0].response_format, "{\"type\":\"json_object\"}"));
		CHECK(!ps.p[1].response_format);
		char *body = cmp_request_body(&ps.p[0], "m", 0, 64);
		CHECK(body && strstr(body, "\"stream\":true") && strstr(body, "\"include_usage\":true") &&
		      strstr(body, "\"max_tokens\":64") && strstr(body, "\"response_format\""));
		free(body);
	}
	cmp_prompts_free(&ps);
	unlink(p);
	free(p);
	p = write_tmp("{\"id\":1}\n");
	CHECK(cmp_prompts_read(p, &ps, &err) < 0 && strstr(err.msg, ":1: needs"));
	unlink(p);
	free(p);
}

/* ---- formats ---- */

static char *render(int fmt, const cmp_row *rows, int n)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	cmp_format_rows(f, fmt, rows, n);
	cmp_format_errors(f, fmt, rows, n);
	fclose(f);
	return buf;
}

static void test_formats(void)
{
	cmp_result ok = { .ok = 1, .http_status = 200, .ttft_s = 0.25, .total_s = 1.25, .chars = 50,
			  .usage_valid = 1, .completion_tokens = 20, .xstats_valid = 1, .hit_valid = 1,
			  .hit_rate = 0.5, .bytes_read = 2.5e6 };
	cmp_result bad = { .ok = 0, .http_status = 401, .ttft_s = -1, .total_s = 0.01 };
	snprintf(bad.error, sizeof bad.error, "401 from X: key, \"refused\"");
	cmp_row rows[2] = { { .round = 1, .id = "p|1", .side = "local", .r = &ok },
			    { .round = 1, .id = "p|1", .side = "remote", .r = &bad } };
	char *t = render(CMP_FMT_TABLE, rows, 2);
	const char *want_table =
		"round  id   side    status    ttft ms  total s  chars  chars/s  tokens  tok/s    hit  MB read\n"
		"    1  p|1  local   ok            250     1.25     50     50.0      20   20.0  50.0%      2.5\n"
		"    1  p|1  remote  FAIL 401      n/a     0.01    n/a      n/a     n/a    n/a\n"
		"round 1, p|1, remote: 401 from X: key, \"refused\"\n";
	if (strcmp(t, want_table)) {
		fprintf(stderr, "table:\n%s\nwant:\n%s", t, want_table);
		FAIL("the table rendering differs (above)");
	}
	free(t);
	t = render(CMP_FMT_MARKDOWN, rows, 2);
	const char *want_md =
		"| round | id | side | status | ttft ms | total s | chars | chars/s | tokens | tok/s | hit | MB read |\n"
		"| ---: | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n"
		"| 1 | p\\|1 | local | ok | 250 | 1.25 | 50 | 50.0 | 20 | 20.0 | 50.0% | 2.5 |\n"
		"| 1 | p\\|1 | remote | FAIL 401 | n/a | 0.01 | n/a | n/a | n/a | n/a |  |  |\n"
		"- round 1, p|1, remote: 401 from X: key, \"refused\"\n";
	if (strcmp(t, want_md)) {
		fprintf(stderr, "markdown:\n%s\nwant:\n%s", t, want_md);
		FAIL("the markdown rendering differs (above)");
	}
	free(t);
	t = render(CMP_FMT_CSV, rows, 2);
	const char *want_csv =
		"round,id,side,ok,http_status,ttft_ms,total_s,chars,chars_per_s,prompt_tokens,"
		"completion_tokens,tokens_per_s,expert_hit_rate,bytes_read,json_parsed,json_fields,"
		"json_agree,error\n"
		"1,p|1,local,true,200,250,1.25,50,50,0,20,20,0.5,2.5e+06,,,,\n"
		"1,p|1,remote,false,401,,0.01,,,,,,,,,,,\"401 from X: key, \"\"refused\"\"\"\n";
	if (strcmp(t, want_csv)) {
		fprintf(stderr, "csv:\n%s\nwant:\n%s", t, want_csv);
		FAIL("the csv rendering differs (above)");
	}
	free(t);
	t = render(CMP_FMT_JSONL, rows, 2);
	char *nl = t ? strchr(t, '\n') : NULL;
	CHECK(nl && strchr(nl + 1, '\n') && !strchr(strchr(nl + 1, '\n') + 1, '\n'));
	if (nl) {
		json_t *a = json_loadb(t, (size_t)(nl - t), 0, NULL), *b = json_loads(nl + 1, 0, NULL);
		CHECK(a && json_real_value(json_object_get(a, "ttft_ms")) == 250.0);
		CHECK(a && json_real_value(json_object_get(a, "tokens_per_s")) == 20.0);
		CHECK(a && json_is_null(json_object_get(a, "error")));
		CHECK(b && json_is_null(json_object_get(b, "ttft_ms")) &&
		      json_is_false(json_object_get(b, "ok")) &&
		      !strcmp(json_string_value(json_object_get(b, "error")), bad.error));
		json_decref(a);
		json_decref(b);
	}
	free(t);
}

int main(void)
{
	test_extract();
	test_diff();
	test_sse();
	test_metrics_urls();
	test_prompts();
	test_formats();
	cmp_fields_free(&fields);
	return test_summary(__FILE__);
}
