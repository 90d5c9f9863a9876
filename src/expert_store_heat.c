/* expert_store_heat.c - routing heat: what to pin, remembered across runs.
 *
 * heat[l][e] is a decayed count of routings: every routing of expert e at
 * layer l adds 1, and each token routed at l multiplies all of layer l's
 * heat by 2^(-1/HEAT_HALF_LIFE). Decay is applied lazily from the layer
 * tick at which the value was last touched, so noting a routing is O(1).
 *
 * The pinned hot set is the hottest experts (all layers together) that fit
 * the pin budget; it is re-chosen as heat moves (expert_store_hot.c decides
 * when) and loaded at open from the saved heat.
 *
 * heat.bin (HEAT_DIR/heat.bin), little-endian, written to a temporary file
 * (heat.bin.tmp.PID.N: unique to the process and the write, so processes
 * sharing a cache directory never rename each other's file), fsynced,
 * renamed over the old one, directory fsynced:
 *   off  size  field
 *   0    8     magic "COLIHEAT"
 *   8    4     version (1); other versions are ignored with a warning
 *   12   4     n_layers
 *   16   4     n_experts
 *   20   4     reserved (0)
 *   24   8     tokens noted on the first MoE layer when saved
 *   32   64    container fingerprint (hex, NUL padded); a file of another
 *              model is ignored
 *   96   4*N   heat, f32, N = n_layers * n_experts, decayed to the save time
 *   96+4N 4    CRC32C of bytes [0, 96+4N)
 * A missing file means "no history"; a short, corrupted or mismatched one
 * is ignored with one warning (heat only ever changes speed). */
#include "config.h"

#include "expert_store_int.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "coli_log.h"
#include "util_crc32c.h"
#include "util_file.h"

#define HEAT_HALF_LIFE 2048.0 /* tokens; long: the pinned set is the long-term favourites */
#define HEAT_MAGIC "COLIHEAT"
#define HEAT_VERSION 1
#define HEAT_HDR 96

int store_heat_init(expert_store *s, coli_err *err)
{
	size_t n = (size_t)s->n_layers * (size_t)s->n_experts;
	s->heat = calloc(n, sizeof *s->heat);
	s->heat_tick = calloc(n, sizeof *s->heat_tick);
	s->layer_tick = calloc((size_t)s->n_layers, sizeof *s->layer_tick);
	if (!s->heat || !s->heat_tick || !s->layer_tick)
		return coli_err_set(err, -ENOMEM, "expert store: out of memory");
	s->heat_log_decay = log(0.5) / HEAT_HALF_LIFE;
	return 0;
}

void store_heat_free(expert_store *s)
{
	free(s->heat);
	free(s->heat_tick);
	free(s->layer_tick);
	s->heat = NULL;
	s->heat_tick = NULL;
	s->layer_tick = NULL;
}

float store_heat_now(const expert_store *s, int layer, int e)
{
	size_t i = (size_t)layer * (size_t)s->n_experts + (size_t)e;
	uint32_t now = (uint32_t)s->layer_tick[layer];
	if (s->heat[i] == 0)
		return 0;
	return (float)(s->heat[i] * exp((double)(uint32_t)(now - s->heat_tick[i]) * s->heat_log_decay));
}

void store_heat_note(expert_store *s, int layer, int e)
{
	size_t i = (size_t)layer * (size_t)s->n_experts + (size_t)e;
	/* layer_tick[layer] was advanced for this token by the caller. */
	float h = store_heat_now(s, layer, e) + 1.0f;
	s->heat[i] = h;
	s->heat_tick[i] = (uint32_t)s->layer_tick[layer];
	expert_stats_set_heat(s->stats, layer, e, h);
}

typedef struct heat_rank {
	float h;
	int32_t i;
} heat_rank;

static int rank_cmp(const void *a, const void *b)
{
	const heat_rank *x = a, *y = b;
	if (x->h != y->h)
		return x->h < y->h ? 1 : -1;
	return x->i < y->i ? -1 : x->i > y->i;
}

/* Every record with heat >= 1.5 (seen about once is not "hot"), hottest
 * first; *m gets the count. NULL when out of memory. */
static heat_rank *heat_rank_all(const expert_store *s, size_t *m)
{
	size_t n = (size_t)s->n_layers * (size_t)s->n_experts;
	heat_rank *r = malloc((n ? n : 1) * sizeof *r);
	*m = 0;
	if (!r)
		return NULL;
	for (int l = 0; l < s->n_layers; l++) {
		if (!s->c->expert_shard_paths[l])
			continue;
		for (int e = 0; e < s->n_experts; e++) {
			float h = store_heat_now(s, l, e);
			if (h >= 1.5f)
				r[(*m)++] = (heat_rank){ h, (int32_t)((size_t)l * (size_t)s->n_experts + (size_t)e) };
		}
	}
	qsort(r, *m, sizeof *r, rank_cmp);
	return r;
}

int store_heat_ranked(const expert_store *s, int32_t *ids, int max)
{
	size_t m;
	heat_rank *r = heat_rank_all(s, &m);
	if (!r)
		return 0; /* heat only changes speed */
	int k = 0;
	for (; k < max && (size_t)k < m; k++)
		ids[k] = r[k].i;
	free(r);
	return k;
}

int store_heat_choose(expert_store *s)
{
	if (s->pin_slots <= 0)
		return 0;
	size_t n = (size_t)s->n_layers * (size_t)s->n_experts, m;
	heat_rank *r = heat_rank_all(s, &m);
	if (!r)
		return 0; /* keep the current set; heat only changes speed */
	size_t keep = m < (size_t)s->pin_slots ? m : (size_t)s->pin_slots;
	uint8_t *want = calloc(n, 1);
	if (!want) {
		free(r);
		return 0;
	}
	for (size_t k = 0; k < keep; k++)
		want[r[k].i] = 1;
	int changed = 0;
	for (size_t i = 0; i < n; i++)
		changed += want[i] != s->hot_set[i];
	memcpy(s->hot_set, want, n);
	s->n_hot = (int)keep;
	free(want);
	free(r);
	return changed;
}

static char *heat_path(const expert_store *s, const char *suffix)
{
	size_t n = strlen(s->o.heat_dir) + 32;
	char *p = malloc(n);
	if (p)
		snprintf(p, n, "%s/heat.bin%s", s->o.heat_dir, suffix);
	return p;
}

size_t store_heat_size(const expert_store *s)
{
	return HEAT_HDR + 4 * (size_t)s->n_layers * (size_t)s->n_experts + 4;
}

void store_heat_fill(const expert_store *s, uint8_t *b)
{
	size_t size = store_heat_size(s);
	memset(b, 0, HEAT_HDR);
	memcpy(b, HEAT_MAGIC, 8);
	uint32_t u32[4] = { HEAT_VERSION, (uint32_t)s->n_layers, (uint32_t)s->n_experts, 0 };
	memcpy(b + 8, u32, sizeof u32);
	uint64_t tokens = s->first_moe >= 0 ? s->layer_tick[s->first_moe] : 0;
	memcpy(b + 24, &tokens, 8);
	memcpy(b + 32, s->c->fingerprint, strnlen(s->c->fingerprint, 64));
	for (int l = 0; l < s->n_layers; l++)
		for (int e = 0; e < s->n_experts; e++) {
			float h = store_heat_now(s, l, e);
			memcpy(b + HEAT_HDR + 4 * ((size_t)l * (size_t)s->n_experts + (size_t)e), &h, 4);
		}
	uint32_t crc = crc32c_update(0, b, size - 4);
	memcpy(b + size - 4, &crc, 4);
}

int store_heat_write(const char *heat_dir, const uint8_t *b, size_t size, coli_err *err)
{
	size_t n = strlen(heat_dir) + 16;
	char *dst = malloc(n);
	if (!dst)
		return coli_err_set(err, -ENOMEM, "expert store: out of memory");
	snprintf(dst, n, "%s/heat.bin", heat_dir);
	mkdir(heat_dir, 0777); /* CACHE_DIR/hot-experts may not exist yet */
	int rc = coli_file_replace(dst, b, size, err);
	free(dst);
	return rc;
}

int store_heat_save(expert_store *s, coli_err *err)
{
	if (!s->o.heat_dir || !s->heat)
		return 0;
	size_t size = store_heat_size(s);
	uint8_t *b = malloc(size);
	if (!b)
		return coli_err_set(err, -ENOMEM, "expert store: out of memory");
	store_heat_fill(s, b);
	int rc = store_heat_write(s->o.heat_dir, b, size, err);
	free(b);
	return rc;
}

int expert_heat_read(const char *path, const coli_container *c, float *heat, uint64_t *tokens,
		     coli_err *err)
{
	const size_t n = (size_t)c->config.num_hidden_layers * (size_t)c->config.n_routed_experts;
	const size_t size = HEAT_HDR + 4 * n + 4;
	uint8_t *b = malloc(size + 1);
	int rc = -EINVAL;
	FILE *f = fopen(path, "rb");
	if (!f) {
		rc = coli_err_set(err, -errno, "%s: %s", path, strerror(errno));
		goto out;
	}
	if (!b) {
		rc = coli_err_set(err, -ENOMEM, "%s: out of memory", path);
		goto out;
	}
	size_t got = fread(b, 1, size + 1, f);
	uint32_t u32[4], crc;
	if (got < HEAT_HDR || memcmp(b, HEAT_MAGIC, 8)) {
		coli_err_set(err, rc, "%s is not a heat file", path);
		goto out;
	}
	memcpy(u32, b + 8, sizeof u32);
	if (u32[0] != HEAT_VERSION) {
		coli_err_set(err, rc, "%s has version %u (this build reads %d)", path, u32[0], HEAT_VERSION);
		goto out;
	}
	if (u32[1] != (uint32_t)c->config.num_hidden_layers || u32[2] != (uint32_t)c->config.n_routed_experts ||
	    got != size) {
		coli_err_set(err, rc, "%s is for another shape or truncated", path);
		goto out;
	}
	memcpy(&crc, b + size - 4, 4);
	if (crc != crc32c_update(0, b, size - 4)) {
		coli_err_set(err, rc, "%s fails its checksum", path);
		goto out;
	}
	if (strncmp((char *)b + 32, c->fingerprint, 64)) {
		coli_err_set(err, rc, "%s belongs to another model", path);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		float h;
		memcpy(&h, b + HEAT_HDR + 4 * i, 4);
		heat[i] = isfinite(h) && h > 0 ? h : 0;
	}
	if (tokens)
		memcpy(tokens, b + 24, 8);
	rc = 0;
out:
	if (f)
		fclose(f);
	free(b);
	return rc;
}

/* Returns 0 when heat was loaded, 1 when there was none or it was ignored. */
int store_heat_load(expert_store *s)
{
	if (!s->o.heat_dir)
		return 1;
	char *path = heat_path(s, "");
	if (!path)
		return 1;
	coli_err err;
	coli_err_clear(&err);
	int rc = expert_heat_read(path, s->c, s->heat, NULL, &err);
	if (rc < 0) {
		if (rc != -ENOENT) /* a missing file: no history yet */
			coli_warn("expert store: %s; ignored", err.msg);
		free(path);
		return 1;
	}
	size_t n = (size_t)s->n_layers * (size_t)s->n_experts;
	for (size_t i = 0; i < n; i++) {
		s->heat_tick[i] = 0;
		expert_stats_set_heat(s->stats, (int)(i / (size_t)s->n_experts),
				      (int)(i % (size_t)s->n_experts), s->heat[i]);
	}
	for (int l = 0; l < s->n_layers; l++)
		s->layer_tick[l] = 0;
	coli_info("expert store: loaded routing heat from %s", path);
	free(path);
	return 0;
}
