/* server_metrics.c - Prometheus text exposition for /metrics.
 *
 * Threads: every HTTP connection thread writes the counters (relaxed
 * atomics; each value is exact, a scrape may straddle one update); the
 * /metrics handler reads them. The expert-store series come from
 * expert_stats_snapshot, which is itself lock-free for readers. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "expert_store_stats.h"
#include "server_internal.h"

static const int status_codes[SRV_N_STATUS] = { 200, 204, 400, 401, 404, 405, 413, 415, 429,
						500, 503, 0 };
static const double ttft_le_ms[SRV_TTFT_BUCKETS] = { 5, 10, 25, 50, 100, 250, 500, 1000, 2500,
						     5000, 10000, 30000 };
static const double tps_le[SRV_TPS_BUCKETS] = { 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000 };

static const char *srv_route_name(int route)
{
	static const char *const names[SRV_ROUTE_COUNT] = {
		"models", "chat_completions", "completions", "messages", "count_tokens",
		"health", "metrics", "other", "responses", "responses_id",
	};
	return route >= 0 && route < SRV_ROUTE_COUNT ? names[route] : "other";
}

void srv_metrics_request(srv_metrics *m, int route, int status)
{
	int i = 0;
	while (i < SRV_N_STATUS - 1 && status_codes[i] != status)
		i++;
	if (route < 0 || route >= SRV_ROUTE_COUNT)
		route = SRV_ROUTE_OTHER;
	atomic_fetch_add_explicit(&m->requests[route][i], 1, memory_order_relaxed);
}

void srv_metrics_generation(srv_metrics *m, const srv_usage *u, double ttft_ms, double tps)
{
	atomic_fetch_add_explicit(&m->tokens_in, (uint64_t)u->prompt, memory_order_relaxed);
	atomic_fetch_add_explicit(&m->tokens_out, (uint64_t)u->completion, memory_order_relaxed);
	atomic_fetch_add_explicit(&m->cached_tokens, (uint64_t)u->cached, memory_order_relaxed);
	if (ttft_ms > 0) {
		int i = 0;
		while (i < SRV_TTFT_BUCKETS && ttft_ms > ttft_le_ms[i])
			i++;
		atomic_fetch_add_explicit(&m->ttft_hist[i], 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&m->ttft_sum_us, (uint64_t)(ttft_ms * 1000.0),
					  memory_order_relaxed);
		atomic_fetch_add_explicit(&m->ttft_count, 1, memory_order_relaxed);
	}
	if (tps > 0) {
		int i = 0;
		while (i < SRV_TPS_BUCKETS && tps > tps_le[i])
			i++;
		atomic_fetch_add_explicit(&m->tps_hist[i], 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&m->tps_sum_milli, (uint64_t)(tps * 1000.0),
					  memory_order_relaxed);
		atomic_fetch_add_explicit(&m->tps_count, 1, memory_order_relaxed);
	}
}

#define LD(x) ((unsigned long long)atomic_load_explicit(&(x), memory_order_relaxed))

static void histogram(util_buf *b, const char *name, const char *help, const double *le, int n,
		      const _Atomic uint64_t *hist, double scale, double sum, unsigned long long count)
{
	util_buf_printf(b, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
	unsigned long long cum = 0;
	for (int i = 0; i < n; i++) {
		cum += LD(hist[i]);
		util_buf_printf(b, "%s_bucket{le=\"%g\"} %llu\n", name, le[i] * scale, cum);
	}
	cum += LD(hist[n]);
	util_buf_printf(b, "%s_bucket{le=\"+Inf\"} %llu\n%s_sum %.6f\n%s_count %llu\n", name, cum,
		       name, sum, name, count);
}

static void counter(util_buf *b, const char *name, const char *help, unsigned long long v)
{
	util_buf_printf(b, "# HELP %s %s\n# TYPE %s counter\n%s %llu\n", name, help, name, name, v);
}

/* Prometheus label value: backslash, double quote and newline escaped. */
static void label_escape(char *out, size_t cap, const char *in)
{
	size_t o = 0;
	for (; *in && o + 3 < cap; in++) {
		if (*in == '\\' || *in == '"') {
			out[o++] = '\\';
			out[o++] = *in;
		} else if (*in == '\n') {
			out[o++] = '\\';
			out[o++] = 'n';
		} else {
			out[o++] = *in;
		}
	}
	out[o] = '\0';
}

static void expert_series(util_buf *b, const expert_stats *st)
{
	char name[EXPERT_STATS_MAX_DRIVES][300];
	if (!st)
		return;
	expert_stats_summary *s = calloc(1, sizeof *s);
	if (!s)
		return;
	expert_stats_snapshot(st, s);
	for (int i = 0; i < s->n_drives && i < EXPERT_STATS_MAX_DRIVES; i++)
		label_escape(name[i], sizeof name[i], s->drives[i].name);
	util_buf_printf(b, "# HELP coli_expert_hits_total Expert lookups served from RAM, by tier.\n"
		       "# TYPE coli_expert_hits_total counter\n"
		       "coli_expert_hits_total{tier=\"pinned\"} %llu\n"
		       "coli_expert_hits_total{tier=\"cached\"} %llu\n"
		       "coli_expert_hits_total{tier=\"prefetched\"} %llu\n",
		       (unsigned long long)s->hits_pinned, (unsigned long long)s->hits_cached,
		       (unsigned long long)s->hits_prefetched);
	counter(b, "coli_expert_misses_total", "Expert lookups that waited for a disk read.",
		(unsigned long long)s->misses);
	counter(b, "coli_expert_bytes_read_total", "Bytes of expert records read from all drives.",
		(unsigned long long)s->bytes_read);
	counter(b, "coli_expert_checksum_verified_total",
		"Expert records read from disk and checked against their CRC-32C.",
		(unsigned long long)s->checksum_records);
	counter(b, "coli_expert_checksum_errors_total",
		"Expert records read from disk that failed their CRC-32C (not cached; read again).",
		(unsigned long long)s->checksum_errors);
	if (s->hit_rate_valid)
		util_buf_printf(b, "# HELP coli_expert_hit_rate Cumulative expert cache hit rate.\n"
			       "# TYPE coli_expert_hit_rate gauge\ncoli_expert_hit_rate %.6f\n",
			       s->hit_rate);
	util_buf_printf(b, "# HELP coli_drive_bytes_read_total Expert bytes read per drive.\n"
		       "# TYPE coli_drive_bytes_read_total counter\n");
	/* slots without a name were never configured */
	for (int i = 0; i < s->n_drives && i < EXPERT_STATS_MAX_DRIVES; i++)
		if (s->drives[i].name[0])
			util_buf_printf(b, "coli_drive_bytes_read_total{drive=\"%d\",name=\"%s\"} %llu\n", i,
			       name[i], (unsigned long long)s->drives[i].bytes);
	util_buf_printf(b, "# HELP coli_drive_bandwidth_bytes_per_second Read bandwidth per drive.\n"
		       "# TYPE coli_drive_bandwidth_bytes_per_second gauge\n");
	for (int i = 0; i < s->n_drives && i < EXPERT_STATS_MAX_DRIVES; i++)
		if (s->drives[i].name[0])
			util_buf_printf(b,
			       "coli_drive_bandwidth_bytes_per_second{drive=\"%d\",name=\"%s\",window=\"1s\"} %.0f\n"
			       "coli_drive_bandwidth_bytes_per_second{drive=\"%d\",name=\"%s\",window=\"10s\"} %.0f\n",
			       i, name[i], s->drives[i].bw_1s, i, name[i], s->drives[i].bw_10s);
	free(s);
}

char *srv_metrics_render(const srv_metrics *m, int queue_len, const struct expert_stats *st)
{
	util_buf b = { 0 };
	util_buf_puts(&b, "# HELP coli_http_requests_total HTTP requests by route and status.\n"
		     "# TYPE coli_http_requests_total counter\n");
	for (int r = 0; r < SRV_ROUTE_COUNT; r++)
		for (int i = 0; i < SRV_N_STATUS; i++) {
			unsigned long long v = LD(m->requests[r][i]);
			if (!v)
				continue;
			if (status_codes[i])
				util_buf_printf(&b, "coli_http_requests_total{route=\"%s\",code=\"%d\"} %llu\n",
					       srv_route_name(r), status_codes[i], v);
			else
				util_buf_printf(&b, "coli_http_requests_total{route=\"%s\",code=\"other\"} %llu\n",
					       srv_route_name(r), v);
		}
	counter(&b, "coli_prompt_tokens_total", "Prompt tokens of finished requests.", LD(m->tokens_in));
	counter(&b, "coli_completion_tokens_total", "Generated tokens of finished requests.",
		LD(m->tokens_out));
	counter(&b, "coli_cached_prompt_tokens_total", "Prompt tokens reused from a KV session.",
		LD(m->cached_tokens));
	counter(&b, "coli_requests_cancelled_total", "Requests cancelled because the client left.",
		LD(m->cancelled));
	counter(&b, "coli_requests_rejected_busy_total", "Requests refused with 503 (queue full).",
		LD(m->rejected_busy));
	counter(&b, "coli_http_connections_timed_out_total",
		"Connections closed for not sending a complete request within --request-timeout.",
		LD(m->conn_timed_out));
	counter(&b, "coli_http_connections_evicted_total",
		"Connections waiting for their request closed to make room for a new one.",
		LD(m->conn_evicted));
	if (queue_len >= 0)
		util_buf_printf(&b, "# HELP coli_queue_length Requests waiting in the engine queue.\n"
			       "# TYPE coli_queue_length gauge\ncoli_queue_length %d\n", queue_len);
	util_buf_printf(&b, "# HELP coli_active_streams Streaming responses in progress.\n"
		       "# TYPE coli_active_streams gauge\ncoli_active_streams %d\n",
		       atomic_load_explicit(&((srv_metrics *)m)->active_streams, memory_order_relaxed));
	histogram(&b, "coli_ttft_seconds", "Time to first token.", ttft_le_ms, SRV_TTFT_BUCKETS,
		  m->ttft_hist, 1e-3, (double)LD(m->ttft_sum_us) / 1e6, LD(m->ttft_count));
	histogram(&b, "coli_decode_tokens_per_second", "Decode speed per request.", tps_le,
		  SRV_TPS_BUCKETS, m->tps_hist, 1.0, (double)LD(m->tps_sum_milli) / 1e3,
		  LD(m->tps_count));
	expert_series(&b, st);
	if (b.oom) {
		util_buf_free(&b);
		return NULL;
	}
	return b.p;
}

char *srv_metrics_with_draft(char *text, const coli_draft_stats *ds)
{
	if (!text || !ds)
		return text;
	util_buf b = { 0 };
	util_buf_puts(&b, text);
	free(text);
	util_buf_printf(&b, "# HELP coli_draft_enabled 1 while MTP drafting is on in the latest decode step.\n"
		       "# TYPE coli_draft_enabled gauge\ncoli_draft_enabled %d\n", ds->on);
	util_buf_printf(&b, "# HELP coli_draft_tokens Draft tokens per step in the latest decode step (0: off).\n"
		       "# TYPE coli_draft_tokens gauge\ncoli_draft_tokens %d\n", ds->n);
	counter(&b, "coli_draft_forwards_total", "Decode forward passes (per request), with or without drafts.",
		ds->steps);
	counter(&b, "coli_draft_forward_tokens_total", "Tokens those forward passes produced.", ds->tokens);
	counter(&b, "coli_draft_drafted_total", "MTP draft tokens verified.", ds->drafted);
	counter(&b, "coli_draft_accepted_total", "Draft tokens accepted (the rest were rolled back).",
		ds->accepted);
	if (ds->drafted)
		util_buf_printf(&b, "# HELP coli_draft_acceptance_ratio Accepted / drafted since start.\n"
			       "# TYPE coli_draft_acceptance_ratio gauge\ncoli_draft_acceptance_ratio %.6f\n",
			       ds->acceptance);
	if (ds->steps)
		util_buf_printf(&b, "# HELP coli_draft_tokens_per_forward Tokens per decode forward pass since start.\n"
			       "# TYPE coli_draft_tokens_per_forward gauge\ncoli_draft_tokens_per_forward %.6f\n",
			       ds->tokens_per_forward);
	if (b.oom) {
		util_buf_free(&b);
		return NULL;
	}
	return b.p;
}

char *srv_metrics_with_steps(char *text, const coli_step_stats *st)
{
	if (!text || !st)
		return text;
	util_buf b = { 0 };
	util_buf_puts(&b, text);
	free(text);
	util_buf_printf(&b, "# HELP coli_requests_running Requests in a slot (prefill or decode).\n"
		       "# TYPE coli_requests_running gauge\ncoli_requests_running %d\n", st->active);
	util_buf_printf(&b, "# HELP coli_requests_queued Requests waiting for a slot or for KV room.\n"
		       "# TYPE coli_requests_queued gauge\ncoli_requests_queued %d\n", st->queued);
	util_buf_printf(&b, "# HELP coli_queue_waiting_kv 1 while the queue's head waits for KV memory.\n"
		       "# TYPE coli_queue_waiting_kv gauge\ncoli_queue_waiting_kv %d\n", st->waiting_kv);
	util_buf_printf(&b, "# HELP coli_step_rows Rows (decode + prompt) of the latest engine step.\n"
		       "# TYPE coli_step_rows gauge\ncoli_step_rows %d\n", st->last_rows);
	counter(&b, "coli_steps_total", "Engine steps (one forward over every active slot).",
		(unsigned long long)st->steps);
	counter(&b, "coli_step_rows_total", "Rows those steps evaluated.", (unsigned long long)st->rows);
	counter(&b, "coli_step_prompt_rows_total", "Of them, prompt tokens.", (unsigned long long)st->prompt_rows);
	util_buf_printf(&b, "# HELP coli_kv_bytes KV memory the slots hold, and the budget it stays within.\n"
		       "# TYPE coli_kv_bytes gauge\ncoli_kv_bytes{kind=\"used\"} %lld\n"
		       "coli_kv_bytes{kind=\"budget\"} %lld\n", st->kv_used, st->kv_budget);
	counter(&b, "coli_kv_spill_read_bytes_total",
		"Bytes of spilled KV rows and index keys read back from session files.",
		(unsigned long long)st->spill_bytes);
	counter(&b, "coli_kv_spill_full_bytes_total",
		"What reading every spilled row back each time would have read (DSA reads the selected ones).",
		(unsigned long long)st->spill_full_bytes);
	if (b.oom) {
		util_buf_free(&b);
		return NULL;
	}
	return b.p;
}
