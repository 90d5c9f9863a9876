/* kv_format.h - internals shared by kv_file.c (the format: header, record
 * walk, inspection) and kv_session*.c (sessions). Not a contract between
 * modules: only the kv module includes it. The byte layout is specified at
 * the top of kv_file.c. */
#ifndef COLI_KV_FORMAT_H
#define COLI_KV_FORMAT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "coli_err.h"
#include "kv_file.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the .kv format stores host floats; only little-endian hosts are supported"
#endif

#define KV_MAGIC "COLIKV\0\1"
#define KV_HDR_SIZE 128u
#define KV_TYPE_DATA 0xD47A4B31u
#define KV_TYPE_TRUNC 0x7C5A4B32u
#define KV_REC_HEAD 16u
#define KV_REC_FRAME 20u          /* head + CRC */
#define KV_SCRATCH (256u << 10)   /* CRC reads of payloads we do not keep */

/* One record in the in-RAM table. `live` shrinks when a later truncate
 * cuts into a data record; offsets of rows use `n` (the stride). */
typedef struct kv_rec {
	uint64_t off;
	uint32_t type, first, n, live;
} kv_rec;

/* State of one pass over the records (open, inspect). */
typedef struct kv_walk {
	/* in */
	int fd;
	const char *path;
	uint64_t size;            /* snapshot: records beyond it do not exist */
	uint32_t n_layers, width;
	uint32_t index_layers, index_width; /* format 3 index key parts */
	int verify;               /* read payloads and check CRCs */
	int32_t *tokens;          /* optional destination [cap] */
	float **rows;             /* optional destination [slot][cap][slot width] */
	uint32_t cap;
	/* out */
	kv_rec *recs;
	int n_recs, cap_recs;
	uint32_t n_tokens;
	uint64_t end;
	int status;
	char problem[256];
	unsigned char *scratch;
	size_t scratch_cap;
} kv_walk;

static inline void kv_put_u32(unsigned char *p, uint32_t v)
{
	p[0] = v & 0xff; p[1] = (v >> 8) & 0xff; p[2] = (v >> 16) & 0xff; p[3] = v >> 24;
}

static inline uint32_t kv_get_u32(const unsigned char *p)
{
	return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Shape of a record's rows: `layers` parts of `width` numbers per token
 * (the attention rows), then `ilayers` parts of `iwidth` (the DSA index
 * keys of the full indexer layers, format 3; 0 before). A part is a
 * "slot": 0..layers-1 the layers, then the index key parts in order. */
typedef struct kv_geom {
	uint32_t layers, width, ilayers, iwidth;
} kv_geom;

static inline kv_geom kv_geom_of(uint32_t layers, uint32_t width, uint32_t ilayers, uint32_t iwidth)
{
	kv_geom g = { layers, width, ilayers, ilayers ? iwidth : 0 };
	return g;
}

static inline uint32_t kv_geom_slots(kv_geom g)
{
	return g.layers + g.ilayers;
}

static inline uint32_t kv_geom_slot_width(kv_geom g, uint32_t slot)
{
	return slot < g.layers ? g.width : g.iwidth;
}

/* numbers per token over every slot */
static inline uint64_t kv_geom_numbers(kv_geom g)
{
	return (uint64_t)g.layers * g.width + (uint64_t)g.ilayers * g.iwidth;
}

/* numbers before slot's rows in a record of n tokens (after its ids) */
static inline uint64_t kv_geom_slot_start(kv_geom g, uint64_t n, uint32_t slot)
{
	if (slot < g.layers)
		return (uint64_t)slot * n * g.width;
	return (uint64_t)g.layers * n * g.width + (uint64_t)(slot - g.layers) * n * g.iwidth;
}

static inline uint64_t kv_fmt_data_payload(uint64_t n, kv_geom g)
{
	return 4u * n + 4u * n * kv_geom_numbers(g);
}

static inline kv_geom kv_walk_geom(const kv_walk *w)
{
	return kv_geom_of(w->n_layers, w->width, w->index_layers, w->index_width);
}

/* pread/pwritev all bytes or fail (-errno; -EIO when the file shrank). */
int kv_fmt_pread_full(int fd, void *buf, size_t len, uint64_t off);
int kv_fmt_pwritev_full(int fd, struct iovec *iov, int cnt, uint64_t off);
int kv_fmt_fingerprint_ok(const char *fp);
void kv_fmt_header_encode(unsigned char b[KV_HDR_SIZE], const kv_header *h);
int kv_fmt_header_read(int fd, const char *path, uint64_t size, kv_header *h, coli_err *err);
/* 1 if the 16-byte record head at off has a known type and a length that
 * fits in w->size and matches w's shape (no CRC check). */
int kv_fmt_frame_plausible(const kv_walk *w, uint64_t off, const unsigned char *head);
/* Walk the records of w->size bytes: fills recs, n_tokens, end, status,
 * problem (and the destinations when given). <0 only on I/O errors. */
int kv_fmt_walk(kv_walk *w);
/* Token count bound for sizing the destinations of a walk. */
uint32_t kv_fmt_walk_bound(kv_walk *w);

#endif
