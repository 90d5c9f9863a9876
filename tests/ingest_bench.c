/* ingest_bench.c - throughput of the ingest paths, for the record (not a
 * test: built by `make check`, never run by it, no timed assertions).
 *   tests/ingest_bench [MiB]   (default 64: size of the BF16 tensor)
 * Prints JSON: BF16 and FP8(+block scales) reads through st_read_f32 from a
 * warm page cache, pure conversion rates, and SHA-256 of the file. */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <time.h>

#include "ingest_dtype.h"
#include "ingest_util.h"
#include "ingest_safetensors.h"
#include "util_sha256.h"
#include "util_time.h"

int main(int argc, char **argv)
{
	int mib = argc > 1 ? atoi(argv[1]) : 64;
	if (mib < 1)
		mib = 1;
	int64_t rows = (int64_t)mib * 128, cols = 4096;   /* rows*cols*2 bytes = mib MiB */
	size_t n = (size_t)(rows * cols);
	tmp_setup();
	uint16_t *bf = malloc(n * 2);
	uint8_t *f8 = malloc(n);
	float *out = malloc(n * 4);
	int64_t br = (rows + 127) / 128, bc = (cols + 127) / 128;
	float *sc = malloc((size_t)(br * bc) * 4);
	for (size_t i = 0; i < n; i++) {
		bf[i] = (uint16_t)(0x3c00 + (i * 2654435761u >> 20) % 2048);
		f8[i] = (uint8_t)((i * 2654435761u >> 24) % 0x7e);
	}
	for (int64_t i = 0; i < br * bc; i++)
		sc[i] = 1.0f / (float)(i + 1);
	struct st_builder b;
	stb_init(&b);
	stb_add(&b, "bf", "BF16", 2, (int64_t[]){ rows, cols }, bf, n * 2);
	stb_add(&b, "f8", "F8_E4M3", 2, (int64_t[]){ rows, cols }, f8, n);
	stb_add(&b, "f8_scale_inv", "F32", 2, (int64_t[]){ br, bc }, sc, (size_t)(br * bc) * 4);
	stb_write(&b, tpath("model.safetensors"));

	st_checkpoint *ck;
	coli_err err = { 0 };
	if (st_open_dir(tmpdir, &ck, &err)) {
		fprintf(stderr, "%s\n", err.msg);
		return 1;
	}
	double t0, t_bf = 1e9, t_f8 = 1e9, t_cv = 1e9, t_sha = 1e9;
	for (int rep = 0; rep < 3; rep++) {  /* best of 3: the first warms the cache */
		t0 = coli_now_s();
		st_read_f32(ck, st_find(ck, "bf"), out, &err);
		t_bf = fmin(t_bf, coli_now_s() - t0);
		t0 = coli_now_s();
		st_read_f32(ck, st_find(ck, "f8"), out, &err);
		t_f8 = fmin(t_f8, coli_now_s() - t0);
		t0 = coli_now_s();
		dtype_to_f32(ST_BF16, bf, out, n);
		t_cv = fmin(t_cv, coli_now_s() - t0);
		char hex[65];
		t0 = coli_now_s();
		coli_sha256_file(tpath("model.safetensors"), hex, &err);
		t_sha = fmin(t_sha, coli_now_s() - t0);
	}
	double mb = (double)n * 2 / 1e6;
	printf("{\"elements\": %zu, \"read_bf16_gelem_s\": %.3f, \"read_fp8_scaled_gelem_s\": %.3f, "
	       "\"convert_bf16_gelem_s\": %.3f, \"sha256_mb_s\": %.1f}\n",
	       n, (double)n / t_bf / 1e9, (double)n / t_f8 / 1e9, (double)n / t_cv / 1e9,
	       (mb * 1.5 + (double)(br * bc) * 4e-6) / t_sha);
	st_close(ck);
	free(bf);
	free(f8);
	free(out);
	free(sc);
	return 0;
}
