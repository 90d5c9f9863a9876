/* engine_profile.h - routing profiles: how often each (layer, expert) was
 * chosen by the rows of a request, a session or a label's requests.
 *
 * The engine counts each request's routings in its slot (a uint32 per
 * layer and expert, allocated with the slot; forward_moe.c adds one per
 * row and chosen expert through coli_seq.route_counts) and, when the
 * request ends, hands a copy to the profile writer thread
 * (engine_profile_writer.c), which sums it into files:
 *   CACHE_DIR/kv/NAME.prof          the session NAME (beside NAME.kv)
 *   CACHE_DIR/profiles/LABEL.prof   every request labelled LABEL
 *   CACHE_DIR/profiles/_all.prof    every request (the baseline)
 *
 * File format (little-endian; colitop-kv(5) "ROUTING PROFILES"):
 *   off  size  field
 *   0    8     magic "COLIPROF"
 *   8    4     version (1); other versions are refused
 *   12   4     n_layers (the model's decoder layers; dense ones stay 0)
 *   16   4     n_experts (routed experts per layer)
 *   20   4     top_k (experts chosen per row)
 *   24   8     tokens: rows routed (at the first MoE layer)
 *   32   8     requests summed in
 *   40   64    container fingerprint (hex, NUL padded)
 *   104  64    label (NUL padded; "" for a session's file)
 *   168  8*N   counts, u64, N = n_layers * n_experts, layer-major
 *   168+8N 4   CRC-32C of bytes [0, 168+8N)
 * A reader refuses a file whose size, magic, version or CRC is wrong. */
#ifndef COLI_ENGINE_PROFILE_H
#define COLI_ENGINE_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#include "coli_err.h"

#define COLI_PROFILE_MAGIC "COLIPROF"
#define COLI_PROFILE_VERSION 1
#define COLI_PROFILE_HDR 168
#define COLI_PROFILE_LABEL_MAX 64 /* with the NUL */
#define COLI_PROFILE_ALL "_all"   /* the label file every request goes to */

typedef struct coli_profile {
	int n_layers, n_experts, top_k;
	uint64_t tokens, requests;
	char fingerprint[65];
	char label[COLI_PROFILE_LABEL_MAX];
	uint64_t *counts;          /* (n_layers, n_experts) */
} coli_profile;

/* A zeroed profile of that shape (counts allocated). */
int coli_profile_init(coli_profile *p, int n_layers, int n_experts, int top_k, coli_err *err);
void coli_profile_free(coli_profile *p);
/* A label: 1..63 characters of [A-Za-z0-9._-], not starting with '.'
 * or '_' (names starting with '_' are the store's own). 1 when valid. */
int coli_profile_label_valid(const char *s);
/* Bytes of the encoded file. */
size_t coli_profile_size(int n_layers, int n_experts);
/* Encode into b (coli_profile_size bytes). */
void coli_profile_encode(const coli_profile *p, uint8_t *b);
/* Read PATH. -ENOENT when absent; -EINVAL (err names the file and what is
 * wrong) when it is not a valid profile. */
int coli_profile_read(const char *path, coli_profile *out, coli_err *err);
/* PATH := p, through coli_file_replace. */
int coli_profile_write(const char *path, const coli_profile *p, coli_err *err);
/* dst += src (same shape; -EINVAL otherwise). */
int coli_profile_add(coli_profile *dst, const coli_profile *src, coli_err *err);

#endif
