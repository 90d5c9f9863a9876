/* scale_check_bench.c - what the expert store's scale check
 * (coli_container_check_expert, run once per record read from disk) costs
 * next to the work that record is read for: one token through its gate, up
 * and down products (coli_matmul). GLM-5 expert shape by default (I = 2048,
 * H = 6144, int4-g64: a 21 MiB record).
 *
 *   bench/scale_check_bench [records=16] [threads=1] [I=2048] [H=6144]
 *
 * The records (16 x 21 MiB by default, beyond any last-level cache) are
 * visited in turn, so every check and every product finds its record in
 * RAM, not in cache, as a record just read by O_DIRECT is. Prints the
 * milliseconds per record of each and their ratio; both are measured in
 * the same run. Not part of `make check` (it is a measurement).
 *
 * Also the record's CRC-32C (container format 2, crc32c_update: the
 * hardware path where the CPU has one), on the same records in the same
 * rotation: a record that matches its CRC skips the scale check
 * (expert_store.c, store_slot_loaded), so crc_ms - check_ms is what
 * verification adds per record read. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model_container.h"
#include "quant_kernels.h"
#include "quant.h"
#include "util_crc32c.h"
#include "util_time.h"

static float gauss(unsigned *s)
{
	double u = (rand_r(s) + 1.0) / (RAND_MAX + 2.0), v = (rand_r(s) + 1.0) / (RAND_MAX + 2.0);
	return (float)(0.02 * sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v));
}

int main(int argc, char **argv)
{
	int n_rec = argc > 1 ? atoi(argv[1]) : 16, threads = argc > 2 ? atoi(argv[2]) : 1;
	int I = argc > 3 ? atoi(argv[3]) : 2048, H = argc > 4 ? atoi(argv[4]) : 6144;
	coli_container c;
	memset(&c, 0, sizeof c);
	c.expert_qtype = COLI_Q_INT4;
	const int rows[3] = { I, I, H }, cols[3] = { H, H, I };
	size_t off = 0;
	for (int k = 0; k < 3; k++) {
		c.expert_part_offset[k] = off;
		c.expert_part_rows[k] = rows[k];
		c.expert_part_cols[k] = cols[k];
		off += (coli_qtype_bytes(COLI_Q_INT4, rows[k], cols[k]) + 63) & ~(size_t)63;
	}
	c.expert_record_size = (off + 4095) & ~(size_t)4095;
	/* one quantized record, copied n_rec times */
	uint8_t *base = aligned_alloc(4096, c.expert_record_size * (size_t)n_rec);
	float *w = malloc(sizeof(float) * (size_t)I * (size_t)H);
	float *x = malloc(sizeof(float) * (size_t)(H > I ? H : I)), *y = malloc(sizeof(float) * (size_t)(H > I ? H : I));
	coli_pool *pool = coli_pool_new(threads);
	if (!base || !w || !x || !y || !pool)
		return 1;
	unsigned seed = 1;
	memset(base, 0, c.expert_record_size);
	for (int k = 0; k < 3; k++) {
		for (size_t i = 0; i < (size_t)rows[k] * (size_t)cols[k]; i++)
			w[i] = gauss(&seed);
		if (coli_quantize_rows(COLI_Q_INT4, w, rows[k], cols[k], base + c.expert_part_offset[k]))
			return 1;
	}
	for (int r = 1; r < n_rec; r++)
		memcpy(base + (size_t)r * c.expert_record_size, base, c.expert_record_size);
	for (int i = 0; i < (H > I ? H : I); i++)
		x[i] = gauss(&seed);
	double t_check = 0, t_mm = 0, t_crc = 0;
	uint32_t crc_acc = 0; /* summed, so the CRCs are not optimized away */
	int bad = 0, rounds = 6;
	for (int round = 0; round < rounds; round++) {
		for (int r = 0; r < n_rec; r++) {
			/* rotate which goes first so none warms another's cache */
			for (int pass = 0; pass < 3; pass++) {
				const uint8_t *use = base + (size_t)((r + pass * (n_rec / 3)) % n_rec) * c.expert_record_size;
				double t0 = coli_now_s();
				if (pass == (round + 2) % 3) {
					crc_acc += crc32c_update(0, use, c.expert_record_size);
					t_crc += coli_now_s() - t0;
				} else if (pass == round % 3) {
					bad |= coli_container_check_expert(&c, use) >= 0;
					t_check += coli_now_s() - t0;
				} else {
					for (int k = 0; k < 3; k++) {
						coli_qmat m = coli_container_expert_part(&c, use, k);
						coli_matmul(pool, &m, x, 1, y);
					}
					t_mm += coli_now_s() - t0;
				}
			}
		}
	}
	int n = rounds * n_rec;
	printf("{\"record_mib\": %.2f, \"threads\": %d, \"check_ms\": %.3f, \"matvec_ms\": %.3f, "
	       "\"check_over_matvec\": %.4f, \"crc32c_ms\": %.3f, \"crc32c_gbps\": %.2f, "
	       "\"crc32c_hw\": %s, \"crc32c_over_check\": %.3f, \"sound\": %s, \"crc_xor\": %u}\n",
	       c.expert_record_size / 1048576.0, threads, 1e3 * t_check / n, 1e3 * t_mm / n,
	       t_check / t_mm, 1e3 * t_crc / n, (double)c.expert_record_size * n / t_crc / 1e9,
	       crc32c_hw_available() ? "true" : "false", t_crc / t_check, bad ? "false" : "true",
	       (unsigned)crc_acc);
	coli_pool_free(pool);
	free(base);
	free(w);
	free(x);
	free(y);
	return bad;
}
