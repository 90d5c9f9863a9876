/* engine_profile.c - the routing profile file (format in engine_profile.h). */
#include "config.h"

#include "engine_profile.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util_crc32c.h"
#include "util_file.h"

int coli_profile_init(coli_profile *p, int n_layers, int n_experts, int top_k, coli_err *err)
{
	memset(p, 0, sizeof *p);
	if (n_layers <= 0 || n_experts <= 0 || n_layers > 4096 || n_experts > 65536)
		return coli_err_set(err, -EINVAL, "profile: bad shape %d x %d", n_layers, n_experts);
	p->counts = calloc((size_t)n_layers * (size_t)n_experts, sizeof *p->counts);
	if (!p->counts)
		return coli_err_set(err, -ENOMEM, "profile: out of memory");
	p->n_layers = n_layers;
	p->n_experts = n_experts;
	p->top_k = top_k;
	return 0;
}

void coli_profile_free(coli_profile *p)
{
	if (!p)
		return;
	free(p->counts);
	p->counts = NULL;
}

int coli_profile_label_valid(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n == 0 || n >= COLI_PROFILE_LABEL_MAX || s[0] == '.' || s[0] == '_')
		return 0;
	for (size_t i = 0; i < n; i++) {
		const char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
		      c == '_' || c == '-'))
			return 0;
	}
	return 1;
}

size_t coli_profile_size(int n_layers, int n_experts)
{
	return COLI_PROFILE_HDR + 8 * (size_t)n_layers * (size_t)n_experts + 4;
}

void coli_profile_encode(const coli_profile *p, uint8_t *b)
{
	const size_t n = (size_t)p->n_layers * (size_t)p->n_experts, size = coli_profile_size(p->n_layers, p->n_experts);
	memset(b, 0, COLI_PROFILE_HDR);
	memcpy(b, COLI_PROFILE_MAGIC, 8);
	const uint32_t u32[4] = { COLI_PROFILE_VERSION, (uint32_t)p->n_layers, (uint32_t)p->n_experts,
				  (uint32_t)p->top_k };
	memcpy(b + 8, u32, sizeof u32);
	memcpy(b + 24, &p->tokens, 8);
	memcpy(b + 32, &p->requests, 8);
	memcpy(b + 40, p->fingerprint, strnlen(p->fingerprint, 64));
	memcpy(b + 104, p->label, strnlen(p->label, COLI_PROFILE_LABEL_MAX - 1));
	memcpy(b + COLI_PROFILE_HDR, p->counts, 8 * n);
	const uint32_t crc = crc32c_update(0, b, size - 4);
	memcpy(b + size - 4, &crc, 4);
}

int coli_profile_read(const char *path, coli_profile *out, coli_err *err)
{
	memset(out, 0, sizeof *out);
	uint8_t hdr[COLI_PROFILE_HDR], *b = NULL;
	int rc = 0;
	FILE *f = fopen(path, "rb");
	if (!f)
		return coli_err_set(err, -errno, "%s: %s", path, strerror(errno));
	struct stat st;
	if (fstat(fileno(f), &st) || fread(hdr, 1, sizeof hdr, f) != sizeof hdr ||
	    memcmp(hdr, COLI_PROFILE_MAGIC, 8)) {
		rc = coli_err_set(err, -EINVAL, "%s: not a routing profile", path);
		goto out;
	}
	uint32_t u32[4];
	memcpy(u32, hdr + 8, sizeof u32);
	if (u32[0] != COLI_PROFILE_VERSION) {
		rc = coli_err_set(err, -EINVAL, "%s: profile version %u (this build reads %d)", path, u32[0],
				  COLI_PROFILE_VERSION);
		goto out;
	}
	if (u32[1] == 0 || u32[2] == 0 || u32[1] > 4096 || u32[2] > 65536 ||
	    (uint64_t)st.st_size != coli_profile_size((int)u32[1], (int)u32[2])) {
		rc = coli_err_set(err, -EINVAL, "%s: profile of %u x %u experts is %lld bytes: truncated or damaged",
				  path, u32[1], u32[2], (long long)st.st_size);
		goto out;
	}
	const size_t size = (size_t)st.st_size;
	b = malloc(size);
	if (!b) {
		rc = coli_err_set(err, -ENOMEM, "%s: out of memory", path);
		goto out;
	}
	memcpy(b, hdr, sizeof hdr);
	uint32_t crc;
	if (fread(b + sizeof hdr, 1, size - sizeof hdr, f) != size - sizeof hdr ||
	    (memcpy(&crc, b + size - 4, 4), crc != crc32c_update(0, b, size - 4))) {
		rc = coli_err_set(err, -EINVAL, "%s: profile fails its checksum", path);
		goto out;
	}
	if ((rc = coli_profile_init(out, (int)u32[1], (int)u32[2], (int)u32[3], err)))
		goto out;
	memcpy(&out->tokens, b + 24, 8);
	memcpy(&out->requests, b + 32, 8);
	memcpy(out->fingerprint, b + 40, 64);
	memcpy(out->label, b + 104, COLI_PROFILE_LABEL_MAX - 1);
	memcpy(out->counts, b + COLI_PROFILE_HDR, 8 * (size_t)out->n_layers * (size_t)out->n_experts);
out:
	free(b);
	fclose(f);
	return rc;
}

int coli_profile_write(const char *path, const coli_profile *p, coli_err *err)
{
	const size_t size = coli_profile_size(p->n_layers, p->n_experts);
	uint8_t *b = malloc(size);
	if (!b)
		return coli_err_set(err, -ENOMEM, "%s: out of memory", path);
	coli_profile_encode(p, b);
	int rc = coli_file_replace(path, b, size, err);
	free(b);
	return rc;
}

int coli_profile_add(coli_profile *dst, const coli_profile *src, coli_err *err)
{
	if (dst->n_layers != src->n_layers || dst->n_experts != src->n_experts)
		return coli_err_set(err, -EINVAL, "profiles of different shapes (%d x %d and %d x %d)", dst->n_layers,
				    dst->n_experts, src->n_layers, src->n_experts);
	const size_t n = (size_t)dst->n_layers * (size_t)dst->n_experts;
	for (size_t i = 0; i < n; i++)
		dst->counts[i] += src->counts[i];
	dst->tokens += src->tokens;
	dst->requests += src->requests;
	if (!dst->top_k)
		dst->top_k = src->top_k;
	return 0;
}
