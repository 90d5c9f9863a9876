/* convert_check.c - verify a converted container against its source.
 *
 * usage: convert_check SRC_HF_DIR MODEL_DIR
 *
 * Opens MODEL_DIR with coli_container_open (MTP included) and checks:
 * every resident tensor is 64-byte aligned, has the qtype the quant policy
 * prescribes, and dequantizes to the source (st_read_f32) exactly for f32
 * and within the format's rounding bound for int8 / int4-g64 (per 64-block:
 * int8 |e| <= amax/127/2, int4 |e| <= (max-min)/15/2 plus half-precision
 * rounding of d and m); every source tensor outside the routed experts is
 * present; every expert record is 4096-aligned in its shard, its parts
 * decode to the source experts within the same bounds and the padding is
 * zero. Also checks find/qmat on missing and mis-shaped names. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model_container.h"
#include "quant.h"
#include "ingest_safetensors.h"
#include "test_util.h"

/* a broken conversion fails every block: stop after 20 reports */
#define FAIL_CAPPED(...)                                     \
	do {                                                 \
		FAIL(__VA_ARGS__);                           \
		if (test_failures > 20)                      \
			exit(test_summary(__FILE__));        \
	} while (0)

/* Compare decoded values with the source, block by block: one check per
 * tensor (test_summary fails a run that compared nothing). */
static void compare(const char *what, int qtype, const float *src, const float *got, size_t n)
{
	test_checks++;
	if (qtype == COLI_Q_F32) {
		if (memcmp(src, got, n * sizeof *src))
			FAIL_CAPPED("%s: f32 copy differs from the source", what);
		return;
	}
	for (size_t b = 0; b < n; b += COLI_QK) {
		float lo = src[b], hi = src[b], amax = 0;
		for (size_t i = b; i < b + COLI_QK; i++) {
			lo = fminf(lo, src[i]);
			hi = fmaxf(hi, src[i]);
			amax = fmaxf(amax, fabsf(src[i]));
		}
		double bound = qtype == COLI_Q_INT8
				       ? amax / 127.0 * 0.5 * 1.0001 + 1e-12
				       : (hi - lo) / 15.0 * 0.5 * 1.01 + (fabs(lo) + fabs(hi)) * 1e-3 + 1e-7;
		for (size_t i = b; i < b + COLI_QK; i++)
			if (fabs((double)src[i] - (double)got[i]) > bound) {
				FAIL_CAPPED("%s: element %zu: source %g, decoded %g (bound %g)", what, i,
				     src[i], got[i], bound);
				return;
			}
	}
}

static int expected_qtype(const coli_container *c, const char *name, int rows, int cols)
{
	int dense = coli_qtype_parse(c->quant_dense), mtp = coli_qtype_parse(c->quant_mtp);
	int L = -1;
	sscanf(name, "model.layers.%d.", &L);
	/* vectors, routers, and tensors convert does not know (kept f32) */
	if (cols == 1 || strstr(name, "mlp.gate.weight") || strstr(name, ".indexer."))
		return COLI_Q_F32;
	int q = dense;
	if (L >= c->config.num_hidden_layers)
		q = mtp;
	else if (!strcmp(name, "model.embed_tokens.weight"))
		q = coli_qtype_parse(c->quant_embed);
	else if (!strcmp(name, "lm_head.weight"))
		q = coli_qtype_parse(c->quant_lm_head);
	(void)rows;
	return cols % COLI_QK ? COLI_Q_F32 : q;
}

static float *read_src(const st_checkpoint *ck, const char *name, size_t n)
{
	const st_tensor *t = st_find(ck, name);
	coli_err err = { 0, "" };
	if (!t || (size_t)st_numel(t) != n) {
		FAIL_CAPPED("%s: missing in the source or wrong size", name);
		return NULL;
	}
	float *x = malloc(n * sizeof *x);
	if (!x || st_read_f32(ck, t, x, &err) < 0) {
		FAIL_CAPPED("%s: %s", name, err.msg);
		free(x);
		return NULL;
	}
	return x;
}

static void check_resident(const coli_container *c, const st_checkpoint *ck)
{
	for (int i = 0; i < c->n_tensors; i++) {
		const coli_container_tensor *t = &c->tensors[i];
		size_t n = (size_t)t->rows * (size_t)t->cols;
		if ((uintptr_t)t->data % 64)
			FAIL_CAPPED("%s: data not 64-byte aligned", t->name);
		int want = expected_qtype(c, t->name, t->rows, t->cols);
		if (t->qtype != want)
			FAIL_CAPPED("%s: qtype %s, policy says %s", t->name, coli_qtype_name(t->qtype),
			     coli_qtype_name(want));
		float *src = read_src(ck, t->name, n);
		float *got = malloc(n * sizeof *got);
		if (src && got) {
			coli_dequantize_rows(t->qtype, t->data, t->rows, t->cols, got);
			compare(t->name, t->qtype, src, got, n);
		}
		free(src);
		free(got);
	}
	/* Every source tensor except routed experts of main layers is resident. */
	for (int i = 0; i < ck->n_tensors; i++) {
		const char *name = ck->tensors[i].name;
		int L = -1;
		sscanf(name, "model.layers.%d.", &L);
		if (strstr(name, ".mlp.experts.") && L < c->config.num_hidden_layers)
			continue;
		if (st_is_fp8_scale(ck, &ck->tensors[i])) {
			if (coli_container_find(c, name))
				FAIL_CAPPED("%s: FP8 scales stored as a tensor", name);
			continue;
		}
		if (!coli_container_find(c, name))
			FAIL_CAPPED("%s: in the source, not in the container", name);
	}
}

static void check_experts(const coli_container *c, const st_checkpoint *ck)
{
	static const char *const part[3] = { "gate_proj", "up_proj", "down_proj" };
	const coli_config *g = &c->config;
	size_t rs = c->expert_record_size;
	if (rs == 0 || rs % 4096)
		FAIL_CAPPED("record_size %zu is not a multiple of 4096", rs);
	unsigned char *rec = aligned_alloc(4096, rs ? rs : 4096);
	int shards = 0;
	for (int L = 0; L < g->num_hidden_layers; L++) {
		if (!coli_config_layer_is_moe(g, L)) {
			if (c->expert_shard_paths[L])
				FAIL_CAPPED("dense layer %d has a shard", L);
			continue;
		}
		shards++;
		int fd = open(c->expert_shard_paths[L], O_RDONLY);
		if (fd < 0) {
			FAIL_CAPPED("%s: cannot open", c->expert_shard_paths[L]);
			continue;
		}
		off_t end = lseek(fd, 0, SEEK_END);
		if ((uint64_t)end != (uint64_t)g->n_routed_experts * rs ||
		    (uint64_t)end != c->expert_shard_sizes[L])
			FAIL_CAPPED("%s: size %lld", c->expert_shard_paths[L], (long long)end);
		for (int e = 0; e < g->n_routed_experts; e++) {
			uint64_t off = coli_container_expert_offset(c, e);
			if (off % 4096 || pread(fd, rec, rs, (off_t)off) != (ssize_t)rs) {
				FAIL_CAPPED("layer %d expert %d: record at %llu unreadable or unaligned", L, e,
				     (unsigned long long)off);
				continue;
			}
			size_t used_end = 0;
			for (int k = 0; k < 3; k++) {
				coli_qmat m = coli_container_expert_part(c, rec, k);
				char name[160];
				snprintf(name, sizeof name, "model.layers.%d.mlp.experts.%d.%s.weight", L,
					 e, part[k]);
				size_t n = (size_t)m.rows * (size_t)m.cols;
				if ((uintptr_t)m.data % 64)
					FAIL_CAPPED("%s: part not 64-byte aligned", name);
				if (m.qtype != coli_qtype_parse(c->quant_experts))
					FAIL_CAPPED("%s: qtype %d", name, m.qtype);
				float *src = read_src(ck, name, n);
				float *got = malloc(n * sizeof *got);
				if (src && got) {
					coli_dequantize_rows(m.qtype, m.data, m.rows, m.cols, got);
					compare(name, m.qtype, src, got, n);
				}
				free(src);
				free(got);
				used_end = c->expert_part_offset[k] +
					   coli_qtype_bytes(m.qtype, m.rows, m.cols);
			}
			for (size_t b = used_end; b < rs; b++)
				if (rec[b]) {
					FAIL_CAPPED("layer %d expert %d: padding byte %zu is not zero", L, e, b);
					break;
				}
		}
		close(fd);
	}
	if (!shards)
		FAIL_CAPPED("no expert shards");
	free(rec);
}

int main(int argc, char **argv)
{
	coli_err err = { 0, "" };
	coli_container *c = NULL;
	st_checkpoint *ck = NULL;
	if (argc != 3) {
		fprintf(stderr, "usage: convert_check SRC_HF_DIR MODEL_DIR\n");
		return 2;
	}
	coli_container_opts o = { .load_mtp = 1, .verify = 1 };
	if (coli_container_open(argv[2], &o, &c, &err) < 0) {
		fprintf(stderr, "FAIL: open: %s\n", err.msg);
		return 1;
	}
	if (st_open_dir(argv[1], &ck, &err) < 0) {
		fprintf(stderr, "FAIL: source: %s\n", err.msg);
		return 1;
	}
	if (strlen(c->fingerprint) != 64)
		FAIL_CAPPED("fingerprint '%s'", c->fingerprint);
	check_resident(c, ck);
	check_experts(c, ck);
	coli_qmat m;
	if (coli_container_find(c, "no.such.tensor"))
		FAIL_CAPPED("find: a missing name was found");
	if (coli_container_qmat(c, "model.embed_tokens.weight", 3, 5, &m, &err) != -ENOENT ||
	    !strstr(err.msg, "model.embed_tokens.weight"))
		FAIL_CAPPED("qmat: a mis-shaped request was accepted (%s)", err.msg);
	if (coli_container_qmat(c, "model.embed_tokens.weight", c->config.vocab_size,
				c->config.hidden_size, &m, &err) < 0 || !m.data)
		FAIL_CAPPED("qmat: %s", err.msg);
	printf("%s: %d resident tensors, record %zu bytes, fingerprint %.16s: %s\n", argv[2],
	       c->n_tensors, c->expert_record_size, c->fingerprint, test_failures ? "FAILED" : "ok");
	st_close(ck);
	coli_container_free(c);
	return test_summary(__FILE__);
}
