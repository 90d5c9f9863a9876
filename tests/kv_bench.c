/* kv_bench.c - figures for the kv module (not a test; nothing asserted).
 *
 *   tests/kv_bench [PREFILL_TOKENS [DECODE_TOKENS]]
 *
 * Uses GLM-5.2's KV shape (78 layers x (512 + 64)) in a temporary
 * directory: one prefill record, then one record per decoded token (as the
 * engine appends), an fsync, a cold-ish and a warm load, rows on demand,
 * prefix matching, compaction; plus CRC32C throughput. Prints one JSON
 * object. */
#include "config.h"

#include <errno.h>
#include <time.h>
#include <unistd.h>

#include "util_crc32c.h"
#include "kv_store.h"
#include "kv_test.h"
#include "util_time.h"

#define GL 78
#define GW 576

int main(int argc, char **argv)
{
	int prefill = argc > 1 ? atoi(argv[1]) : 256, decode = argc > 2 ? atoi(argv[2]) : 64;
	coli_err err = { 0 };
	kv_session *s;
	kv_loaded l;
	char *dir = kvt_tmpdir();
	int n = prefill + decode;
	uint64_t bpt = (uint64_t)GL * GW * 4u, mha = (uint64_t)GL * 64 * (192 + 64 + 256) * 4u;

	/* CRC32C throughput over 64 MiB */
	size_t cb = 64u << 20;
	unsigned char *buf = malloc(cb);
	for (size_t i = 0; i < cb; i++)
		buf[i] = (unsigned char)(i * 131u);
	double t0 = coli_now_s();
	volatile uint32_t c = crc32c_update(0, buf, cb);
	double hw = cb / (coli_now_s() - t0) / 1e9;
	t0 = coli_now_s();
	c = crc32c_update_sw(0, buf, cb);
	double sw = cb / (coli_now_s() - t0) / 1e9;
	(void)c;
	free(buf);

	kvt_batch pre, one;
	kvt_batch_fill(&pre, 1, GL, GW, 0, prefill);
	if (kv_session_create(dir, "bench", FP_A, GL, GW, 0, &s, &err) < 0) {
		fprintf(stderr, "%s\n", err.msg);
		return 1;
	}
	t0 = coli_now_s();
	if (kv_session_append(s, pre.tokens, prefill, (const float *const *)pre.rows, &err) < 0) {
		fprintf(stderr, "%s\n", err.msg);
		return 1;
	}
	double t_prefill = coli_now_s() - t0;
	double t_decode = 0;
	for (int i = 0; i < decode; i++) {
		kvt_batch_fill(&one, 1, GL, GW, prefill + i, 1);
		t0 = coli_now_s();
		kv_session_append(s, one.tokens, 1, (const float *const *)one.rows, &err);
		t_decode += coli_now_s() - t0;
		kvt_batch_free(&one);
	}
	t0 = coli_now_s();
	kv_session_sync(s, &err);
	double t_sync = coli_now_s() - t0;
	uint64_t bytes = kv_session_bytes(s);
	kv_session_close(s);

	t0 = coli_now_s();
	if (kv_session_open(dir, "bench", FP_A, GL, GW, 0, &s, &l, &err) < 0) {
		fprintf(stderr, "%s\n", err.msg);
		return 1;
	}
	double t_load = coli_now_s() - t0;
	int ok = kvt_loaded_ok(&l, 1, n);
	kv_loaded_free(&l);
	float *rows = malloc((size_t)n * GW * sizeof(float));
	t0 = coli_now_s();
	for (int k = 0; k < GL; k++)
		kv_session_read_rows(s, k, 0, n, rows, &err);
	double t_rows = coli_now_s() - t0;
	free(rows);
	t0 = coli_now_s();
	kv_session_compact(s, &err);
	double t_compact = coli_now_s() - t0;
	kv_session_close(s);

	/* prefix matching: 20 sessions of n single-token records (tiny rows,
	 * since only the framing and token ids are read) */
	for (int i = 0; i < 20; i++) {
		char name[32];
		snprintf(name, sizeof name, "p%02d", i);
		kv_session *p;
		kv_session_create(dir, name, FP_A, 1, 1, 0, &p, &err);
		for (int k = 0; k < n; k++)
			kvt_append(p, i == 7 ? 1u : 100u + (uint32_t)i, k, 1, &err);
		kv_session_close(p);
	}
	char best[80];
	int m;
	t0 = coli_now_s();
	kv_store_find_prefix(dir, FP_A, pre.tokens, prefill, best, sizeof best, &m, &err);
	double t_prefix = coli_now_s() - t0;
	/* a kept index: the second lookup only stats the files */
	kv_prefix_index *ix;
	kv_prefix_index_new(dir, &ix, &err);
	kv_prefix_index_find(ix, FP_A, pre.tokens, prefill, best, sizeof best, &m, &err);
	t0 = coli_now_s();
	kv_prefix_index_find(ix, FP_A, pre.tokens, prefill, best, sizeof best, &m, &err);
	double t_prefix_warm = coli_now_s() - t0;
	kv_prefix_index_free(ix);
	kvt_batch_free(&pre);
	kvt_rmrf(dir);

	double mb = bytes / 1e6;
	printf("{\n  \"crc32c_gbps\": {\"hw\": %.2f, \"sw\": %.2f},\n", hw, sw);
	printf("  \"shape\": {\"layers\": %d, \"width\": %d, \"bytes_per_token\": %llu, "
	       "\"mha_bytes_per_token\": %llu, \"ratio\": %.2f},\n", GL, GW,
	       (unsigned long long)bpt, (unsigned long long)mha, (double)mha / bpt);
	printf("  \"tokens\": %d, \"file_bytes\": %llu, \"disk_bytes_per_token\": %.1f,\n", n,
	       (unsigned long long)bytes, (double)bytes / n);
	printf("  \"prefill_append_mbps\": %.0f, \"decode_append_ms_per_token\": %.3f, \"sync_ms\": %.1f,\n",
	       prefill * (bpt + 4) / 1e6 / t_prefill, t_decode * 1e3 / (decode ? decode : 1), t_sync * 1e3);
	printf("  \"load_mbps\": %.0f, \"load_ok\": %s, \"read_rows_all_layers_mbps\": %.0f, \"compact_ms\": %.1f,\n",
	       mb / t_load, ok ? "true" : "false", mb / t_rows, t_compact * 1e3);
	printf("  \"find_prefix_ms_21_sessions\": %.2f, \"kept_index_lookup_ms\": %.3f, \"prefix_match\": %d, \"prefix_session\": \"%s\"\n}\n",
	       t_prefix * 1e3, t_prefix_warm * 1e3, m, best);
	return 0;
}
