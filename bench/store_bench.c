/* store_bench.c - throughput of the expert store's read path on this disk:
 * a synthetic model (random bytes) in DIR, routed at random with no cache,
 * so every acquire is one io_uring batch of top_k record reads. Compare the
 * GB/s with `coli iobench DIR --size RECORD`.
 *
 * Checksums (container format 2): the records carry their CRC-32C, so the
 * O_DIRECT runs are made with the store's verification on and off
 * (--no-verify-checksums), interleaved, and the CRC-32C rate itself is
 * measured on record-sized buffers beyond the last-level cache, hardware
 * and portable paths: what the check costs per GB against what the drive
 * gives per GB.
 *
 *   bench/store_bench DIR [record_MiB=16] [experts=64] [top_k=8] [tokens=40]
 *
 * Writes layers x experts x record bytes under DIR/store-bench-XXXXXX and
 * removes it. Not part of `make check` (it is a measurement). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "expert_store_stats.h"
#include "expert_store.h"
#include "util_crc32c.h"
#include "util_time.h"

#define LAYERS 3 /* layer 0 dense, 1..2 MoE */

static double run(coli_container *c, int direct, int prefetch, int top_k, int tokens, uint64_t seed,
		  int no_checksums)
{
	expert_store_opts o;
	expert_store_opts_default(&o);
	o.cache_bytes = 0;
	o.pin_bytes = 0;
	o.direct = direct;
	o.prefetch = prefetch;
	o.max_batch = top_k;
	o.no_checksums = no_checksums;
	expert_store *s;
	coli_err err;
	if (expert_store_open(c, &o, &s, &err)) {
		fprintf(stderr, "open: %s\n", err.msg);
		exit(1);
	}
	int E = c->config.n_routed_experts;
	int *ex = malloc(sizeof(int) * (size_t)top_k * LAYERS);
	const void **recs = malloc(sizeof(void *) * (size_t)top_k);
	double t0 = coli_now_s();
	for (int t = 0; t < tokens; t++) {
		for (int l = 1; l < LAYERS; l++) {
			/* distinct random experts per layer */
			for (int j = 0; j < top_k; j++) {
				int e, dup;
				do {
					seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
					e = (int)((seed >> 33) % (uint64_t)E);
					dup = 0;
					for (int k = 0; k < j; k++)
						dup |= ex[l * top_k + k] == e;
				} while (dup);
				ex[l * top_k + j] = e;
			}
		}
		for (int l = 1; l < LAYERS; l++) {
			if (l + 1 < LAYERS)
				expert_store_prefetch(s, l + 1, ex + (l + 1) * top_k, top_k);
			if (expert_store_acquire(s, l, ex + l * top_k, top_k, recs, &err)) {
				fprintf(stderr, "acquire: %s\n", err.msg);
				exit(1);
			}
			expert_store_release(s, l);
		}
	}
	double dt = coli_now_s() - t0;
	expert_stats_summary sum;
	expert_stats_snapshot(expert_store_stats(s), &sum);
	printf("%-8s prefetch %-3s crc %-3s: %6.2f GB/s (%llu MiB in %.2f s, wait %.2f s, O_DIRECT %s, "
	       "%llu records verified)\n",
	       direct ? "direct" : "buffered", prefetch ? "on" : "off", no_checksums ? "off" : "on",
	       (double)sum.bytes_read / dt / 1e9, (unsigned long long)(sum.bytes_read >> 20), dt,
	       sum.wait_seconds, sum.direct ? "yes" : "no", (unsigned long long)sum.checksum_records);
	expert_store_free(s);
	free(ex);
	free(recs);
	return dt;
}

/* GB/s of CRC-32C over n_buf record-sized buffers visited in turn (beyond
 * the caches, as a record just read by O_DIRECT is), at least 1 s. */
static double crc_rate(uint32_t (*fn)(uint32_t, const void *, size_t), char *const *bufs, int n_buf,
		       size_t rec)
{
	uint64_t bytes = 0;
	uint32_t acc = 0;
	double t0 = coli_now_s(), dt;
	do {
		for (int i = 0; i < n_buf; i++)
			acc ^= fn(0, bufs[i], rec);
		bytes += (uint64_t)n_buf * rec;
	} while ((dt = coli_now_s() - t0) < 1.0);
	if (acc == 0x12345678u)
		printf(" ");
	return (double)bytes / dt / 1e9;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: store_bench DIR [record_MiB] [experts] [top_k] [tokens]\n");
		return 2;
	}
	size_t rec = (size_t)(argc > 2 ? atoi(argv[2]) : 16) << 20;
	int experts = argc > 3 ? atoi(argv[3]) : 64;
	int top_k = argc > 4 ? atoi(argv[4]) : 8;
	int tokens = argc > 5 ? atoi(argv[5]) : 40;
	char dir[512], p[600];
	snprintf(dir, sizeof dir, "%s/store-bench-XXXXXX", argv[1]);
	if (!mkdtemp(dir)) {
		perror(dir);
		return 1;
	}
	snprintf(p, sizeof p, "%s/experts", dir);
	mkdir(p, 0777);
	coli_container c;
	memset(&c, 0, sizeof c);
	char *paths[LAYERS] = { NULL };
	uint64_t sizes[LAYERS] = { 0 };
	c.dir = dir;
	c.config.num_hidden_layers = LAYERS;
	c.config.n_routed_experts = experts;
	c.config.num_experts_per_tok = top_k;
	c.expert_record_size = rec;
	c.expert_shard_paths = paths;
	c.expert_shard_sizes = sizes;
	char *buf = malloc(rec);
	for (size_t i = 0; i < rec; i++)
		buf[i] = (char)(i * 2654435761u >> 13);
	/* the manifest's checksums of these records (format 2) */
	uint32_t *crc_rows[LAYERS] = { NULL };
	c.version = 2;
	c.expert_crc = crc_rows;
	for (int l = 1; l < LAYERS; l++) {
		snprintf(p, sizeof p, "%s/experts/shard-%03d.bin", dir, l);
		paths[l] = strdup(p);
		sizes[l] = (uint64_t)experts * rec;
		FILE *f = fopen(p, "wb");
		crc_rows[l] = malloc(sizeof(uint32_t) * (size_t)experts);
		for (int e = 0; e < experts && f; e++) {
			buf[0] = (char)e;
			crc_rows[l][e] = crc32c_update(0, buf, rec);
			fwrite(buf, 1, rec, f);
		}
		if (!f || fclose(f)) {
			perror(p);
			return 1;
		}
	}
	printf("store_bench: %d MoE layers x %d experts x %zu MiB, top-%d, %d tokens, no cache\n",
	       LAYERS - 1, experts, rec >> 20, top_k, tokens);
	/* the shards just written are still being written back: settle, and
	 * one untimed pass, so the first measured run is not the slow one */
	sync();
	printf("(warm-up) ");
	run(&c, 1, 0, top_k, tokens, 9, 1);
	/* interleaved, same routing seeds: the checksum's cost on the read path */
	double on = 0, off = 0;
	for (int r = 0; r < 2; r++) {
		on += run(&c, 1, 0, top_k, tokens, 1 + (uint64_t)r, 0);
		off += run(&c, 1, 0, top_k, tokens, 1 + (uint64_t)r, 1);
	}
	printf("direct, prefetch off: verified / unverified time %.3f\n", on / off);
	run(&c, 1, 1, top_k, tokens, 2, 0);
	run(&c, 0, 1, top_k, tokens, 3, 0);
	enum { NBUF = 4 };
	char *bufs[NBUF];
	for (int i = 0; i < NBUF; i++) {
		bufs[i] = malloc(rec);
		if (!bufs[i])
			return 1;
		memcpy(bufs[i], buf, rec);
	}
	double hw = crc_rate(crc32c_update, bufs, NBUF, rec), sw = crc_rate(crc32c_update_sw, bufs, NBUF, rec);
	printf("crc32c over %d x %zu MiB: %.2f GB/s (%s), portable %.2f GB/s\n", NBUF, rec >> 20, hw,
	       crc32c_fold_available() ? "VPCLMULQDQ folding" : crc32c_hw_available() ? "SSE4.2 crc32"
	       : "portable, no SSE4.2", sw);
	for (int i = 0; i < NBUF; i++)
		free(bufs[i]);
	for (int l = 1; l < LAYERS; l++) {
		remove(paths[l]);
		free(paths[l]);
		free(crc_rows[l]);
	}
	snprintf(p, sizeof p, "%s/experts", dir);
	remove(p);
	remove(dir);
	free(buf);
	return 0;
}
