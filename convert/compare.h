/* compare.h - `coli compare`: the same prompts against a local and a remote
 * OpenAI-compatible endpoint, streamed, timed, and (with --json) their JSON
 * answers diffed field by field.
 *
 *   compare_prompts.c  PROMPTS file (text lines or JSONL) -> cmp_prompt
 *   compare_client.c   one streamed chat completion over libcurl (SSE)
 *   compare_metrics.c  the local side's /metrics counters (deltas per request)
 *   compare_json.c     JSON extraction from a reply and the path-by-path diff
 *   compare_format.c   table / markdown / CSV / JSONL output
 *   cmd_compare.c      the command
 * Everything except the client and the command is pure and unit-tested. */
#ifndef COLI_COMPARE_H
#define COLI_COMPARE_H

#include <stddef.h>
#include <stdio.h>

#include "coli_err.h"
#include "util_buf.h"

/* ---- prompts ---- */
typedef struct cmp_prompt {
	char *id;                  /* "id" of the JSONL line, else the line number */
	char *messages;            /* JSON array text of the chat messages */
	char *response_format;     /* JSON object text, or NULL */
} cmp_prompt;

typedef struct cmp_prompts {
	cmp_prompt *p;
	int n;
} cmp_prompts;

/* A file of prompts: JSONL when every non-empty line is a JSON object
 * ({"messages": [...]} or {"prompt": "..."}, optional "id", "system",
 * "response_format"), otherwise one prompt per non-empty line. */
int cmp_prompts_read(const char *path, cmp_prompts *out, coli_err *err);
void cmp_prompts_free(cmp_prompts *ps);

/* ---- endpoints and one request ---- */
typedef struct cmp_endpoint {
	const char *name;          /* "local" / "remote" */
	char base[1024];           /* normalized: no trailing '/', "/v1" added when
	                            * the URL has no path */
	const char *model;
	const char *key;           /* the key itself, never printed; NULL = none */
	const char *key_env;       /* its variable, for messages */
	int timeout_s;
} cmp_endpoint;

/* Normalize a base URL as clients do: "http://h:8080" -> ".../v1",
 * "http://h:8080/v1/" -> ".../v1", a URL with another path is kept (some
 * providers serve under e.g. /openai/v1 or /v1beta/openai). */
int cmp_base_url(const char *url, char *out, size_t cap, coli_err *err);

typedef struct cmp_result {
	int ok;                    /* 200, a well-formed stream, [DONE] seen */
	int http_status;           /* 0 = no HTTP answer */
	char error[4096];          /* one line when !ok */
	double ttft_s;             /* first content byte; < 0 = none */
	double total_s;
	util_buf text;             /* the streamed content */
	long chars;                /* UTF-8 characters of text */
	long prompt_tokens, completion_tokens;
	int usage_valid;
	/* local side, from /metrics before and after */
	int xstats_valid, hit_valid;
	double hit_rate;
	double bytes_read;
} cmp_result;

void cmp_result_free(cmp_result *r);

/* The request body for a prompt (stream, include_usage, temperature,
 * max_tokens <= 0 = omitted). Caller frees. */
char *cmp_request_body(const cmp_prompt *p, const char *model, double temperature,
		       int max_tokens);
/* Stream one chat completion. Never fails as a call: errors (connection,
 * HTTP status, malformed SSE, disconnect before [DONE]) land in r. */
void cmp_chat_stream(const cmp_endpoint *ep, const char *body, cmp_result *r);
/* The SSE decoder behind it (pure, for tests): feed bytes; on a data line
 * the content delta is appended, usage noted, [DONE] sets done. Returns
 * -1 with r->error set on malformed input. */
typedef struct cmp_sse {
	char line[1 << 16];
	size_t n;
	int done, overlong;
	double t0;
	cmp_result *r;
} cmp_sse;
int cmp_sse_feed(cmp_sse *s, const char *buf, size_t len, double now);

/* ---- /metrics of the local side ---- */
typedef struct cmp_xstats {
	double hits, misses, bytes;
	int valid;
} cmp_xstats;
/* Parse the Prometheus text of coli's /metrics (pure). */
void cmp_xstats_parse(const char *text, cmp_xstats *x);
/* GET base/metrics; x->valid = 0 when unavailable. */
void cmp_xstats_fetch(const cmp_endpoint *ep, cmp_xstats *x);

/* ---- JSON answers ---- */
enum { CMP_DIFF_MISSING = 1, CMP_DIFF_EXTRA, CMP_DIFF_CHANGED,
       CMP_DIFF_UNPARSED /* a side's answer held no JSON (path "$") */ };

typedef struct cmp_diff {
	char *path;                /* "$", "$.a.b", "$.items[2]", "$[\"odd key\"]" */
	int kind;                  /* MISSING: in remote only; EXTRA: in local only */
	char *local, *remote;      /* compact JSON of each value, NULL when absent */
} cmp_diff;

/* The JSON value in a model's reply: the whole text, else a fenced block
 * (```json ... ``` or ``` ... ```), else the span from the first '{' or
 * '[' to the last matching bracket. NULL when none parses. */
struct json_t;
struct json_t *cmp_json_extract(const char *text, size_t len);

/* Diff local against remote (the reference) leaf by leaf. Numbers compare
 * numerically (1 == 1.0); objects by key, arrays by index. Appends to
 * d and n; also reports every leaf path compared to leaf (path, equal)
 * so the per-field agreement can be tallied. */
typedef void (*cmp_leaf_fn)(void *ctx, const char *path, int equal);
int cmp_json_diff(struct json_t *local, struct json_t *remote, cmp_diff **d, int *n,
		  cmp_leaf_fn leaf, void *ctx);
void cmp_diffs_free(cmp_diff *d, int n);

/* Per-field agreement across prompts. */
typedef struct cmp_field {
	char *path;
	int agree, total;
} cmp_field;
typedef struct cmp_fields {
	cmp_field *f;
	int n, cap;
} cmp_fields;
void cmp_fields_note(void *fields, const char *path, int equal);  /* a cmp_leaf_fn */
void cmp_fields_free(cmp_fields *fs);

/* ---- output ---- */
enum cmp_format { CMP_FMT_TABLE = 1, CMP_FMT_MARKDOWN, CMP_FMT_CSV, CMP_FMT_JSONL };

typedef struct cmp_row {
	int round;                 /* 1-based */
	const char *id;
	const char *side;
	const cmp_result *r;
	int json;                  /* --json: the fields below are meaningful */
	int json_parsed;           /* this side's reply parsed as JSON */
	int json_fields, json_agree; /* leaves compared / equal for this prompt */
} cmp_row;

/* Render rows; cells fixed-point, "n/a" for invalid figures. */
void cmp_format_rows(FILE *f, int fmt, const cmp_row *rows, int n);
/* Errors of the failed requests, one line each (table and markdown). */
void cmp_format_errors(FILE *f, int fmt, const cmp_row *rows, int n);

/* --json details (table, markdown, JSONL; CSV has the per-row columns only). */
typedef struct cmp_diff_row {
	int round;
	const char *id;
	const cmp_diff *d;
} cmp_diff_row;
void cmp_format_diffs(FILE *f, int fmt, const cmp_diff_row *rows, int n);
void cmp_format_fields(FILE *f, int fmt, const cmp_fields *fs);

#endif
