/* kv_file.c - the .kv session format: writer, loader, inspector.
 *
 * FORMAT (version 1; all integers little-endian; see also colitop-kv(5))
 *
 *   Header, 128 bytes at offset 0:
 *     0   8  magic "COLIKV\0\1"
 *     8   4  u32 format version (1); readers refuse newer versions
 *    12   4  u32 header size (128); records start here
 *    16  64  model fingerprint: 64 lowercase hex chars, the sha256 of the
 *            container's manifest.json (no NUL)
 *    80   4  u32 n_layers
 *    84   4  u32 width W (kv_lora_rank + qk_rope_head_dim)
 *    88   4  u32 element type (0 = float32)
 *    92   4  u32 flags (0; reserved)
 *    96   8  i64 created, unix seconds
 *   104  20  reserved, zero
 *   124   4  u32 CRC32C of bytes 0..123
 *
 *   Records, back to back from the header size to the end of the file:
 *     0   4  u32 type: 0xD47A4B31 data, 0x7C5A4B32 truncate
 *     4   4  u32 payload length P
 *     8   4  u32 n: tokens in the record (data), 0 (truncate)
 *    12   4  u32 first: position of the first token (data; must equal the
 *            number of tokens before it), or tokens kept (truncate)
 *    16   P  payload (data only):
 *              i32 token ids [n]
 *              float32 rows, layer-major: layer 0 [n][W], layer 1 [n][W], ...
 *            so P = 4n + 4*n*n_layers*W
 *   16+P  4  u32 CRC32C of bytes 0..16+P-1 of the record
 *
 * A truncate record (P = 0) drops the history after `first` tokens; the
 * next data record continues from there. Every record size is a multiple of
 * 4, so records sit at 4-aligned offsets.
 *
 * READING. A reader never trusts a length beyond the file size. Records are
 * applied until the first bad one (unknown type, impossible length,
 * non-contiguous position, CRC mismatch, or fewer than 20 bytes left). If
 * any valid record (type + length + CRC) starts at a 4-aligned offset after
 * it, the file is corrupt in the middle: refused, left untouched. Otherwise
 * the bad bytes are a torn tail (an append cut by a crash or a full disk):
 * a read-write open truncates them off, a read-only open ignores them
 * (a writer may be appending right now, and each append is a single
 * positioned write at the end, so readers always see a valid prefix). */
#include "config.h"

#include "kv_file.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "coli_log.h"
#include "crc32c.h"
#include "kv_store.h"

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

struct kv_session {
	int fd;
	int lock_fd;                 /* -1 for read-only sessions */
	int flags;
	int readonly;
	int persisted;
	int warned;
	int dirty;                   /* written since the last fsync */
	char dir[PATH_MAX];
	char name[KV_NAME_MAX + 1];
	char path[PATH_MAX];
	uint32_t n_layers, width;
	uint64_t end;                /* end of the last good record */
	int n_tokens;
	kv_rec *recs;                /* every record, in file order */
	int n_recs, cap_recs;
	int *live;                   /* indices of data records holding live tokens */
	int n_live, cap_live;
};

static void put_u32(unsigned char *p, uint32_t v)
{
	p[0] = v & 0xff; p[1] = (v >> 8) & 0xff; p[2] = (v >> 16) & 0xff; p[3] = v >> 24;
}

static uint32_t get_u32(const unsigned char *p)
{
	return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int pread_full(int fd, void *buf, size_t len, uint64_t off)
{
	unsigned char *p = buf;
	while (len) {
		ssize_t r = pread(fd, p, len, (off_t)off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return -EIO; /* file shrank under us */
		p += r; len -= (size_t)r; off += (uint64_t)r;
	}
	return 0;
}

/* pwritev everything, resuming short writes (a file-size limit or a full
 * disk first shows up as a short write, then as the error). */
static int pwritev_full(int fd, struct iovec *iov, int cnt, uint64_t off)
{
	while (cnt > 0) {
		int batch = cnt > IOV_MAX ? IOV_MAX : cnt;
		ssize_t w = pwritev(fd, iov, batch, (off_t)off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		if (w == 0)
			return -ENOSPC;
		off += (uint64_t)w;
		while (cnt > 0 && (size_t)w >= iov->iov_len) {
			w -= (ssize_t)iov->iov_len;
			iov++; cnt--;
		}
		if (cnt > 0 && w > 0) {
			iov->iov_base = (char *)iov->iov_base + w;
			iov->iov_len -= (size_t)w;
		}
	}
	return 0;
}

static int fingerprint_ok(const char *fp)
{
	if (!fp || strlen(fp) != KV_FINGERPRINT_LEN)
		return 0;
	for (int i = 0; i < KV_FINGERPRINT_LEN; i++)
		if (!((fp[i] >= '0' && fp[i] <= '9') || (fp[i] >= 'a' && fp[i] <= 'f')))
			return 0;
	return 1;
}

static void header_encode(unsigned char b[KV_HDR_SIZE], const kv_header *h)
{
	memset(b, 0, KV_HDR_SIZE);
	memcpy(b, KV_MAGIC, 8);
	put_u32(b + 8, h->version);
	put_u32(b + 12, KV_HDR_SIZE);
	memcpy(b + 16, h->fingerprint, KV_FINGERPRINT_LEN);
	put_u32(b + 80, h->n_layers);
	put_u32(b + 84, h->width);
	put_u32(b + 88, h->elem_type);
	put_u32(b + 96, (uint32_t)((uint64_t)h->created & 0xffffffffu));
	put_u32(b + 100, (uint32_t)((uint64_t)h->created >> 32));
	put_u32(b + 124, crc32c_update(0, b, 124));
}

static int header_read(int fd, const char *path, uint64_t size, kv_header *h, coli_err *err)
{
	unsigned char b[KV_HDR_SIZE];
	if (size < KV_HDR_SIZE)
		return coli_err_set(err, -EBADMSG, "%s: not a KV session (%" PRIu64 " bytes, header needs %u)",
				    path, size, KV_HDR_SIZE);
	int rc = pread_full(fd, b, sizeof b, 0);
	if (rc < 0)
		return coli_err_set(err, rc, "%s: read header: %s", path, strerror(-rc));
	if (memcmp(b, KV_MAGIC, 8))
		return coli_err_set(err, -EBADMSG, "%s: not a KV session (bad magic)", path);
	h->version = get_u32(b + 8);
	if (h->version > KV_FORMAT_VERSION)
		return coli_err_set(err, -EPROTONOSUPPORT,
				    "%s: KV format version %u is newer than this build supports (%u)",
				    path, h->version, KV_FORMAT_VERSION);
	if (get_u32(b + 124) != crc32c_update(0, b, 124))
		return coli_err_set(err, -EBADMSG, "%s: header checksum mismatch", path);
	h->header_size = get_u32(b + 12);
	memcpy(h->fingerprint, b + 16, KV_FINGERPRINT_LEN);
	h->fingerprint[KV_FINGERPRINT_LEN] = '\0';
	h->n_layers = get_u32(b + 80);
	h->width = get_u32(b + 84);
	h->elem_type = get_u32(b + 88);
	h->created = (int64_t)((uint64_t)get_u32(b + 96) | (uint64_t)get_u32(b + 100) << 32);
	if (h->version == 0 || h->header_size != KV_HDR_SIZE || h->n_layers == 0 ||
	    h->n_layers > 4096 || h->width == 0 || h->width > (1u << 20) || h->elem_type != 0 ||
	    !fingerprint_ok(h->fingerprint))
		return coli_err_set(err, -EBADMSG, "%s: header fields out of range", path);
	return 0;
}

/* ---- record walk shared by open, inspect and prefix matching ---- */

typedef struct kv_walk {
	/* in */
	int fd;
	const char *path;
	uint64_t size;            /* snapshot: records beyond it do not exist */
	uint32_t n_layers, width;
	int verify;               /* read payloads and check CRCs */
	int32_t *tokens;          /* optional destination [cap] */
	float **rows;             /* optional destination [n_layers][cap][W] */
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

static uint64_t data_payload(uint64_t n, uint32_t layers, uint32_t width)
{
	return 4u * n + 4u * n * layers * (uint64_t)width;
}

static int rec_push(kv_rec **recs, int *n, int *cap, kv_rec r)
{
	if (*n == *cap) {
		int nc = *cap ? *cap * 2 : 64;
		kv_rec *p = realloc(*recs, (size_t)nc * sizeof *p);
		if (!p)
			return -ENOMEM;
		*recs = p;
		*cap = nc;
	}
	(*recs)[(*n)++] = r;
	return 0;
}

/* Allocated on first use (a load into destinations never needs it) and
 * no larger than the bytes at hand, up to KV_SCRATCH. */
static int scratch_get(kv_walk *w, uint64_t want)
{
	size_t cap = want > KV_SCRATCH ? KV_SCRATCH : (size_t)(want + 3) & ~(size_t)3;
	if (cap <= w->scratch_cap)
		return 0;
	unsigned char *p = realloc(w->scratch, cap);
	if (!p)
		return -ENOMEM;
	w->scratch = p;
	w->scratch_cap = cap;
	return 0;
}

/* CRC over [off, off+len) of the file, through a scratch buffer. */
static int crc_range(kv_walk *w, uint64_t off, uint64_t len, uint32_t *crc)
{
	if (len && scratch_get(w, len) < 0)
		return -ENOMEM;
	while (len) {
		size_t chunk = len > w->scratch_cap ? w->scratch_cap : (size_t)len;
		int rc = pread_full(w->fd, w->scratch, chunk, off);
		if (rc < 0)
			return rc;
		*crc = crc32c_update(*crc, w->scratch, chunk);
		off += chunk; len -= chunk;
	}
	return 0;
}

/* Read a data record's payload into the destinations (when given) while
 * computing its CRC; 1 = CRC ok, 0 = mismatch, <0 = I/O error. */
static int payload_check(kv_walk *w, uint64_t off, const unsigned char *head, uint32_t n,
			 uint32_t first, uint32_t len)
{
	uint32_t crc = crc32c_update(0, head, KV_REC_HEAD);
	uint64_t p = off + KV_REC_HEAD;
	int rc;
	if (w->tokens) {
		rc = pread_full(w->fd, w->tokens + first, 4u * (size_t)n, p);
		if (rc < 0)
			return rc;
		crc = crc32c_update(crc, w->tokens + first, 4u * (size_t)n);
	} else if ((rc = crc_range(w, p, 4u * (uint64_t)n, &crc)) < 0) {
		return rc;
	}
	p += 4u * (uint64_t)n;
	size_t row_bytes = (size_t)n * w->width * 4u;
	for (uint32_t l = 0; l < w->n_layers && len; l++) {
		if (w->rows) {
			float *dst = w->rows[l] + (size_t)first * w->width;
			if ((rc = pread_full(w->fd, dst, row_bytes, p)) < 0)
				return rc;
			crc = crc32c_update(crc, dst, row_bytes);
		} else if ((rc = crc_range(w, p, row_bytes, &crc)) < 0) {
			return rc;
		}
		p += row_bytes;
	}
	unsigned char c[4];
	if ((rc = pread_full(w->fd, c, 4, p)) < 0)
		return rc;
	return get_u32(c) == crc;
}

/* Framing checks that need no state: type, length vs file size and shape. */
static int frame_plausible(const kv_walk *w, uint64_t off, const unsigned char *head)
{
	uint32_t type = get_u32(head), len = get_u32(head + 4), n = get_u32(head + 8);
	if (w->size - off < KV_REC_FRAME || (uint64_t)len > w->size - off - KV_REC_FRAME)
		return 0;
	if (type == KV_TYPE_TRUNC)
		return len == 0 && n == 0;
	if (type == KV_TYPE_DATA)
		return n > 0 && (uint64_t)len == data_payload(n, w->n_layers, w->width);
	return 0;
}

/* CRC of a framed record read through the scratch buffer: 1 ok, 0 bad. */
static int record_crc_ok(kv_walk *w, uint64_t off, const unsigned char *head)
{
	uint32_t crc = crc32c_update(0, head, KV_REC_HEAD), len = get_u32(head + 4);
	unsigned char c[4];
	int rc = crc_range(w, off + KV_REC_HEAD, len, &crc);
	if (rc == 0)
		rc = pread_full(w->fd, c, 4, off + KV_REC_HEAD + len);
	return rc < 0 ? rc : get_u32(c) == crc;
}

/* Is there any valid record at a 4-aligned offset after `bad`? */
static int valid_after(kv_walk *w, uint64_t bad)
{
	if (w->size > bad + 4 && scratch_get(w, w->size - bad - 4) < 0)
		return 1; /* cannot tell: be safe, refuse */
	for (uint64_t base = bad + 4; base + KV_REC_FRAME <= w->size;) {
		size_t chunk = (size_t)((w->size - base) > w->scratch_cap ? w->scratch_cap : (w->size - base));
		chunk &= ~(size_t)3;
		if (pread_full(w->fd, w->scratch, chunk, base) < 0)
			return 1; /* cannot tell: be safe, refuse */
		uint64_t next = base + chunk;
		for (size_t i = 0; i + 4 <= chunk; i += 4) {
			uint32_t t = get_u32(w->scratch + i);
			if (t != KV_TYPE_DATA && t != KV_TYPE_TRUNC)
				continue;
			uint64_t off = base + i;
			unsigned char head[KV_REC_HEAD];
			if (w->size - off < KV_REC_FRAME || pread_full(w->fd, head, sizeof head, off) < 0)
				continue;
			if (!frame_plausible(w, off, head))
				continue;
			/* The CRC read reuses the scratch buffer: re-read from here. */
			if (record_crc_ok(w, off, head) != 0)
				return 1;
			next = off + 4;
			break;
		}
		base = next;
	}
	return 0;
}

static void walk_bad(kv_walk *w, uint64_t off, const char *why)
{
	w->end = off;
	if (valid_after(w, off)) {
		w->status = KV_FILE_CORRUPT;
		snprintf(w->problem, sizeof w->problem,
			 "corrupt record at byte %" PRIu64 " (%s) followed by valid data", off, why);
	} else {
		w->status = KV_FILE_TORN;
		snprintf(w->problem, sizeof w->problem,
			 "torn tail: %" PRIu64 " bytes after the last complete record at byte %" PRIu64
			 " (%s)", w->size - off, off, why);
	}
}

static int walk(kv_walk *w)
{
	uint64_t off = KV_HDR_SIZE;
	w->status = KV_FILE_OK;
	w->n_tokens = 0;
	w->n_recs = 0;
	while (off < w->size) {
		unsigned char head[KV_REC_HEAD];
		if (w->size - off < KV_REC_FRAME) {
			walk_bad(w, off, "incomplete record");
			return 0;
		}
		int rc = pread_full(w->fd, head, sizeof head, off);
		if (rc < 0)
			return rc;
		if (!frame_plausible(w, off, head)) {
			walk_bad(w, off, "bad framing");
			return 0;
		}
		uint32_t type = get_u32(head), len = get_u32(head + 4);
		uint32_t n = get_u32(head + 8), first = get_u32(head + 12);
		if ((type == KV_TYPE_DATA && (first != w->n_tokens || (w->tokens && first + n > w->cap))) ||
		    (type == KV_TYPE_TRUNC && first > w->n_tokens)) {
			/* A damaged position field is damage like any other; a
			 * CRC-valid record with impossible positions is never a
			 * torn write. */
			if ((rc = record_crc_ok(w, off, head)) < 0)
				return rc;
			if (!rc) {
				walk_bad(w, off, "checksum mismatch");
				return 0;
			}
			w->end = off;
			w->status = KV_FILE_CORRUPT;
			snprintf(w->problem, sizeof w->problem,
				 "record at byte %" PRIu64 " has position %u, expected %s%u", off, first,
				 type == KV_TYPE_TRUNC ? "at most " : "", w->n_tokens);
			return 0;
		}
		if (w->verify) {
			int ok;
			if (type == KV_TYPE_DATA) {
				ok = payload_check(w, off, head, n, first, len);
			} else {
				unsigned char c[4];
				ok = pread_full(w->fd, c, 4, off + KV_REC_HEAD);
				if (ok == 0)
					ok = get_u32(c) == crc32c_update(0, head, KV_REC_HEAD);
			}
			if (ok < 0)
				return ok;
			if (!ok) {
				walk_bad(w, off, "checksum mismatch");
				return 0;
			}
		}
		kv_rec r = { off, type, first, n, n };
		if (type == KV_TYPE_TRUNC) {
			r.n = r.live = 0;
			for (int i = w->n_recs - 1; i >= 0; i--) {
				kv_rec *p = &w->recs[i];
				if (p->type != KV_TYPE_DATA || p->live == 0)
					continue;
				if (p->first >= first)
					p->live = 0;
				else if (p->first + p->live > first)
					p->live = first - p->first;
				else
					break;
			}
			w->n_tokens = first;
		} else {
			w->n_tokens += n;
		}
		if ((rc = rec_push(&w->recs, &w->n_recs, &w->cap_recs, r)) < 0)
			return rc;
		off += KV_REC_FRAME + len;
	}
	w->end = off;
	return 0;
}

/* Upper bound of token positions, from the framing only (sizes arrays).
 * Follows the history like walk() and stops where it would, so a damaged
 * position field can never ask for a huge allocation. */
static uint32_t walk_bound(kv_walk *w)
{
	uint64_t off = KV_HDR_SIZE;
	uint32_t bound = 0, cur = 0;
	unsigned char head[KV_REC_HEAD];
	while (w->size - off >= KV_REC_FRAME && pread_full(w->fd, head, sizeof head, off) == 0 &&
	       frame_plausible(w, off, head)) {
		uint32_t n = get_u32(head + 8), first = get_u32(head + 12);
		if (get_u32(head) == KV_TYPE_TRUNC) {
			if (first > cur)
				break;
			cur = first;
		} else {
			if (first != cur || (uint64_t)cur + n > INT_MAX)
				break;
			cur += n;
			if (cur > bound)
				bound = cur;
		}
		off += KV_REC_FRAME + get_u32(head + 4);
	}
	return bound;
}

/* ---- sessions ---- */

static int dir_fsync(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int rc = fsync(fd) < 0 ? -errno : 0;
	close(fd);
	return rc;
}

/* dir/.NAME.kv.tmp.PID: hidden (names cannot start with '.'), per process. */
static int tmp_path(const char *dir, const char *name, char *out, size_t cap, coli_err *err)
{
	int n = snprintf(out, cap, "%s/.%s.kv.tmp.%ld", dir, name, (long)getpid());
	if (n < 0 || (size_t)n >= cap)
		return coli_err_set(err, -ENAMETOOLONG, "%s: path too long", dir);
	return 0;
}

static int session_new(const char *dir, const char *name, int flags, kv_session **out, coli_err *err)
{
	kv_session *s = calloc(1, sizeof *s);
	if (!s)
		return coli_err_set(err, -ENOMEM, "out of memory");
	s->fd = s->lock_fd = -1;
	s->flags = flags;
	s->persisted = 1;
	int rc = kv_store_path(dir, name, "kv", s->path, sizeof s->path, err);
	if (rc < 0 || strlen(dir) >= sizeof s->dir) {
		free(s);
		return rc < 0 ? rc : coli_err_set(err, -ENAMETOOLONG, "%s: path too long", dir);
	}
	snprintf(s->dir, sizeof s->dir, "%s", dir);
	snprintf(s->name, sizeof s->name, "%s", name);
	*out = s;
	return 0;
}

static void session_free(kv_session *s)
{
	if (!s)
		return;
	if (s->fd >= 0)
		close(s->fd);
	kv_store_unlock(s->lock_fd);
	free(s->recs);
	free(s->live);
	free(s);
}

static int live_push(kv_session *s, int idx)
{
	if (s->n_live == s->cap_live) {
		int nc = s->cap_live ? s->cap_live * 2 : 64;
		int *p = realloc(s->live, (size_t)nc * sizeof *p);
		if (!p)
			return -ENOMEM;
		s->live = p;
		s->cap_live = nc;
	}
	s->live[s->n_live++] = idx;
	return 0;
}

/* Apply a truncate to the live stack (the record table is already updated
 * for a loaded file; for a new truncate we update both). */
static void live_truncate(kv_session *s, uint32_t keep)
{
	while (s->n_live > 0) {
		kv_rec *r = &s->recs[s->live[s->n_live - 1]];
		if (r->first >= keep) {
			r->live = 0;
			s->n_live--;
			continue;
		}
		if (r->first + r->live > keep)
			r->live = keep - r->first;
		break;
	}
	s->n_tokens = (int)keep;
}

int kv_session_create(const char *dir, const char *name, const char *fingerprint,
		      int n_layers, int width, int flags, kv_session **out, coli_err *err)
{
	kv_session *s = NULL;
	char tmp[PATH_MAX + 32];
	int rc, tfd = -1;
	*out = NULL;
	if (!fingerprint_ok(fingerprint))
		return coli_err_set(err, -EINVAL, "session %s: model fingerprint must be 64 lowercase hex chars", name);
	if (n_layers <= 0 || width <= 0 || n_layers > 4096 || width > (1 << 20))
		return coli_err_set(err, -EINVAL, "session %s: bad shape %d layers x %d", name, n_layers, width);
	if ((rc = session_new(dir, name, flags, &s, err)) < 0)
		return rc;
	if ((rc = kv_store_lock(dir, name, &s->lock_fd, err)) < 0)
		goto fail;
	if (!(flags & KV_CREATE_OVERWRITE) && access(s->path, F_OK) == 0) {
		rc = coli_err_set(err, -EEXIST, "%s: session already exists", s->path);
		goto fail;
	}
	if ((rc = tmp_path(dir, name, tmp, sizeof tmp, err)) < 0)
		goto fail;
	tfd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (tfd < 0) {
		rc = coli_err_set(err, -errno, "%s: %s", tmp, strerror(errno));
		goto fail;
	}
	kv_header h = { .version = KV_FORMAT_VERSION, .header_size = KV_HDR_SIZE,
			.n_layers = (uint32_t)n_layers, .width = (uint32_t)width,
			.created = (int64_t)time(NULL) };
	memcpy(h.fingerprint, fingerprint, KV_FINGERPRINT_LEN + 1);
	unsigned char b[KV_HDR_SIZE];
	header_encode(b, &h);
	struct iovec iov = { b, sizeof b };
	if ((rc = pwritev_full(tfd, &iov, 1, 0)) < 0 || (fsync(tfd) < 0 && (rc = -errno))) {
		coli_err_set(err, rc, "%s: %s", tmp, strerror(-rc));
		goto fail_tmp;
	}
	/* link() never replaces: the exclusive create is atomic even if another
	 * process without our lock races us. */
	if ((flags & KV_CREATE_OVERWRITE) ? rename(tmp, s->path) : link(tmp, s->path)) {
		rc = coli_err_set(err, -errno, "%s: %s", s->path,
				  errno == EEXIST ? "session already exists" : strerror(errno));
		goto fail_tmp;
	}
	unlink(tmp);
	if ((rc = dir_fsync(dir)) < 0) {
		coli_err_set(err, rc, "%s: fsync: %s", dir, strerror(-rc));
		goto fail;
	}
	s->fd = tfd;
	s->n_layers = (uint32_t)n_layers;
	s->width = (uint32_t)width;
	s->end = KV_HDR_SIZE;
	*out = s;
	return 0;
fail_tmp:
	unlink(tmp);
fail:
	if (tfd >= 0)
		close(tfd);
	session_free(s);
	return rc;
}

void kv_loaded_free(kv_loaded *l)
{
	if (!l)
		return;
	if (l->rows)
		for (int i = 0; i < l->n_layers; i++)
			free(l->rows[i]);
	free(l->rows);
	free(l->tokens);
	memset(l, 0, sizeof *l);
}

static int loaded_alloc(kv_loaded *l, uint32_t layers, uint32_t width, uint32_t cap, int rows)
{
	size_t c = cap ? cap : 1;
	l->n_layers = (int)layers;
	l->width = (int)width;
	if (!(l->tokens = malloc(c * sizeof *l->tokens)))
		return -ENOMEM;
	if (!rows)
		return 0;
	if (!(l->rows = calloc(layers, sizeof *l->rows)))
		return -ENOMEM;
	for (uint32_t i = 0; i < layers; i++)
		if (!(l->rows[i] = malloc(c * width * sizeof(float))))
			return -ENOMEM;
	return 0;
}

int kv_session_open(const char *dir, const char *name, const char *expected_fingerprint,
		    int n_layers, int width, int flags, kv_session **out, kv_loaded *loaded,
		    coli_err *err)
{
	kv_session *s = NULL;
	kv_walk w = { 0 };
	kv_header h;
	struct stat st;
	int rc;
	*out = NULL;
	if (loaded)
		memset(loaded, 0, sizeof *loaded);
	if ((rc = session_new(dir, name, flags, &s, err)) < 0)
		return rc;
	s->readonly = !!(flags & KV_OPEN_READONLY);
	if (!s->readonly && (rc = kv_store_lock(dir, name, &s->lock_fd, err)) < 0)
		goto out;
	s->fd = open(s->path, (s->readonly ? O_RDONLY : O_RDWR) | O_CLOEXEC);
	if (s->fd < 0) {
		rc = coli_err_set(err, -errno, "%s: %s", s->path,
				  errno == ENOENT ? "no such session" : strerror(errno));
		goto out;
	}
	if (fstat(s->fd, &st) < 0) {
		rc = coli_err_set(err, -errno, "%s: %s", s->path, strerror(errno));
		goto out;
	}
	if ((rc = header_read(s->fd, s->path, (uint64_t)st.st_size, &h, err)) < 0)
		goto out;
	if (expected_fingerprint && strcmp(expected_fingerprint, h.fingerprint)) {
		rc = coli_err_set(err, -ESTALE, "%s: made by another model (fingerprint %.12s, this model %.12s)",
				  s->path, h.fingerprint, expected_fingerprint);
		goto out;
	}
	if ((n_layers > 0 && (uint32_t)n_layers != h.n_layers) || (width > 0 && (uint32_t)width != h.width)) {
		rc = coli_err_set(err, -EINVAL, "%s: shape %u layers x %u does not match the model's %d x %d",
				  s->path, h.n_layers, h.width, n_layers, width);
		goto out;
	}
	s->n_layers = h.n_layers;
	s->width = h.width;
	w.fd = s->fd;
	w.path = s->path;
	w.size = (uint64_t)st.st_size;
	w.n_layers = h.n_layers;
	w.width = h.width;
	w.verify = 1;
	if (loaded) {
		w.cap = walk_bound(&w);
		if ((rc = loaded_alloc(loaded, h.n_layers, h.width, w.cap, !(flags & KV_OPEN_NO_ROWS))) < 0) {
			coli_err_set(err, rc, "%s: cannot allocate %u tokens of KV", s->path, w.cap);
			goto out;
		}
		w.tokens = loaded->tokens;
		w.rows = loaded->rows;
	}
	if ((rc = walk(&w)) < 0) {
		coli_err_set(err, rc, "%s: read: %s", s->path, strerror(-rc));
		goto out;
	}
	if (w.status == KV_FILE_CORRUPT) {
		rc = coli_err_set(err, -EBADMSG, "%s: %s; refusing to load (file left untouched)",
				  s->path, w.problem);
		goto out;
	}
	if (w.status == KV_FILE_TORN && !s->readonly) {
		if (ftruncate(s->fd, (off_t)w.end) < 0 || fsync(s->fd) < 0) {
			rc = coli_err_set(err, -errno, "%s: cut torn tail: %s", s->path, strerror(errno));
			goto out;
		}
		coli_warn("%s: %s; cut back to %" PRIu64 " bytes (%u tokens kept)", s->path, w.problem,
			  w.end, w.n_tokens);
	}
	s->end = w.end;
	s->n_tokens = (int)w.n_tokens;
	s->recs = w.recs;
	s->n_recs = w.n_recs;
	s->cap_recs = w.cap_recs;
	w.recs = NULL;
	for (int i = 0; i < s->n_recs; i++)
		if (s->recs[i].type == KV_TYPE_DATA && s->recs[i].live > 0 && (rc = live_push(s, i)) < 0) {
			coli_err_set(err, rc, "out of memory");
			goto out;
		}
	if (loaded)
		loaded->n_tokens = s->n_tokens;
	*out = s;
	s = NULL;
	rc = 0;
out:
	free(w.scratch);
	free(w.recs);
	session_free(s);
	if (rc < 0 && loaded)
		kv_loaded_free(loaded);
	return rc;
}

/* The first write error: cut back to the last good record so the file
 * stays a valid prefix, and stop persisting this session. */
static int write_failed(kv_session *s, int rc, const char *what, coli_err *err)
{
	int cut = ftruncate(s->fd, (off_t)s->end) < 0 ? -errno : 0;
	s->persisted = 0;
	coli_err_set(err, rc, "%s: %s failed: %s; session no longer persisted%s", s->path, what,
		     strerror(-rc), cut ? " (could not cut the partial record)" : "");
	return rc;
}

static int skip_unpersisted(kv_session *s)
{
	if (!s->warned)
		coli_warn("%s: not persisted since an earlier write error; KV kept in RAM only", s->path);
	s->warned = 1;
	return 0;
}

int kv_session_append(kv_session *s, const int32_t *tokens, int n,
		      const float *const *layer_rows, coli_err *err)
{
	if (s->readonly)
		return coli_err_set(err, -EBADF, "%s: opened read-only", s->path);
	if (n <= 0 || (int64_t)s->n_tokens + n > INT_MAX)
		return coli_err_set(err, -EINVAL, "%s: bad token count %d", s->path, n);
	if (!s->persisted)
		return skip_unpersisted(s);
	size_t row_bytes = (size_t)n * s->width * sizeof(float);
	uint64_t len = data_payload((uint64_t)n, s->n_layers, s->width);
	if (len > UINT32_MAX)
		return coli_err_set(err, -EFBIG, "%s: record of %d tokens too large; append fewer", s->path, n);
	unsigned char head[KV_REC_HEAD], tail[4];
	put_u32(head, KV_TYPE_DATA);
	put_u32(head + 4, (uint32_t)len);
	put_u32(head + 8, (uint32_t)n);
	put_u32(head + 12, (uint32_t)s->n_tokens);
	uint32_t crc = crc32c_update(0, head, sizeof head);
	crc = crc32c_update(crc, tokens, (size_t)n * 4u);
	for (uint32_t l = 0; l < s->n_layers; l++)
		crc = crc32c_update(crc, layer_rows[l], row_bytes);
	put_u32(tail, crc);
	/* Small fixed vectors would do for most configs; the layer count is
	 * runtime, so the iovec array is sized per call (per record, not per
	 * token; the engine appends a whole turn or step at once). */
	int cnt = (int)s->n_layers + 3;
	struct iovec stackv[256], *iov = cnt <= 256 ? stackv : malloc((size_t)cnt * sizeof *iov);
	if (!iov)
		return coli_err_set(err, -ENOMEM, "out of memory");
	iov[0] = (struct iovec){ head, sizeof head };
	iov[1] = (struct iovec){ (void *)tokens, (size_t)n * 4u };
	for (uint32_t l = 0; l < s->n_layers; l++)
		iov[2 + l] = (struct iovec){ (void *)layer_rows[l], row_bytes };
	iov[cnt - 1] = (struct iovec){ tail, sizeof tail };
	int rc = pwritev_full(s->fd, iov, cnt, s->end);
	if (iov != stackv)
		free(iov);
	if (rc < 0)
		return write_failed(s, rc, "append", err);
	kv_rec r = { s->end, KV_TYPE_DATA, (uint32_t)s->n_tokens, (uint32_t)n, (uint32_t)n };
	if ((rc = rec_push(&s->recs, &s->n_recs, &s->cap_recs, r)) < 0 ||
	    (rc = live_push(s, s->n_recs - 1)) < 0)
		return coli_err_set(err, rc, "out of memory");
	s->end += KV_REC_FRAME + len;
	s->n_tokens += n;
	s->dirty = 1;
	if (s->flags & KV_SYNC_EACH)
		return kv_session_sync(s, err);
	return 0;
}

int kv_session_truncate_tokens(kv_session *s, int n_keep, coli_err *err)
{
	if (s->readonly)
		return coli_err_set(err, -EBADF, "%s: opened read-only", s->path);
	if (n_keep < 0 || n_keep > s->n_tokens)
		return coli_err_set(err, -EINVAL, "%s: cannot keep %d of %d tokens", s->path, n_keep, s->n_tokens);
	if (n_keep == s->n_tokens)
		return 0;
	if (!s->persisted)
		return skip_unpersisted(s);
	unsigned char rec[KV_REC_FRAME];
	put_u32(rec, KV_TYPE_TRUNC);
	put_u32(rec + 4, 0);
	put_u32(rec + 8, 0);
	put_u32(rec + 12, (uint32_t)n_keep);
	put_u32(rec + 16, crc32c_update(0, rec, KV_REC_HEAD));
	struct iovec iov = { rec, sizeof rec };
	int rc = pwritev_full(s->fd, &iov, 1, s->end);
	if (rc < 0)
		return write_failed(s, rc, "truncate", err);
	kv_rec r = { s->end, KV_TYPE_TRUNC, (uint32_t)n_keep, 0, 0 };
	if ((rc = rec_push(&s->recs, &s->n_recs, &s->cap_recs, r)) < 0)
		return coli_err_set(err, rc, "out of memory");
	s->end += KV_REC_FRAME;
	live_truncate(s, (uint32_t)n_keep);
	s->dirty = 1;
	if (s->flags & KV_SYNC_EACH)
		return kv_session_sync(s, err);
	return 0;
}

int kv_session_sync(kv_session *s, coli_err *err)
{
	if (s->readonly || !s->dirty || !s->persisted)
		return 0;
	if (fsync(s->fd) < 0)
		return write_failed(s, -errno, "fsync", err);
	s->dirty = 0;
	return 0;
}

/* Live data record holding position pos (binary search: live records have
 * increasing, contiguous positions). */
static const kv_rec *live_find(const kv_session *s, uint32_t pos)
{
	int lo = 0, hi = s->n_live - 1;
	while (lo <= hi) {
		int mid = (lo + hi) / 2;
		const kv_rec *r = &s->recs[s->live[mid]];
		if (pos < r->first)
			hi = mid - 1;
		else if (pos >= r->first + r->live)
			lo = mid + 1;
		else
			return r;
	}
	return NULL;
}

static uint64_t rows_offset(const kv_session *s, const kv_rec *r, uint32_t layer, uint32_t pos)
{
	return r->off + KV_REC_HEAD + 4u * (uint64_t)r->n +
	       ((uint64_t)layer * r->n + (pos - r->first)) * s->width * 4u;
}

int kv_session_read_rows(kv_session *s, int layer, int first_token, int n, float *out,
			 coli_err *err)
{
	if (layer < 0 || (uint32_t)layer >= s->n_layers || first_token < 0 || n < 0 ||
	    (int64_t)first_token + n > s->n_tokens)
		return coli_err_set(err, -EINVAL, "%s: rows %d+%d of layer %d out of range (%d tokens)",
				    s->path, first_token, n, layer, s->n_tokens);
	uint32_t pos = (uint32_t)first_token, stop = pos + (uint32_t)n;
	while (pos < stop) {
		const kv_rec *r = live_find(s, pos);
		if (!r)
			return coli_err_set(err, -EIO, "%s: no record holds token %u", s->path, pos);
		uint32_t take = r->first + r->live - pos;
		if (take > stop - pos)
			take = stop - pos;
		int rc = pread_full(s->fd, out, (size_t)take * s->width * 4u, rows_offset(s, r, (uint32_t)layer, pos));
		if (rc < 0)
			return coli_err_set(err, rc, "%s: read rows: %s", s->path, strerror(-rc));
		out += (size_t)take * s->width;
		pos += take;
	}
	return 0;
}

/* Copy [off, off+len) of the session file to dst at *doff, extending crc. */
static int copy_range(kv_session *s, int dst, unsigned char *buf, uint64_t off, uint64_t len,
		      uint64_t *doff, uint32_t *crc)
{
	while (len) {
		size_t chunk = len > KV_SCRATCH ? KV_SCRATCH : (size_t)len;
		int rc = pread_full(s->fd, buf, chunk, off);
		if (rc < 0)
			return rc;
		*crc = crc32c_update(*crc, buf, chunk);
		struct iovec iov = { buf, chunk };
		if ((rc = pwritev_full(dst, &iov, 1, *doff)) < 0)
			return rc;
		off += chunk; len -= chunk; *doff += chunk;
	}
	return 0;
}

int kv_session_compact(kv_session *s, coli_err *err)
{
	char tmp[PATH_MAX + 32];
	unsigned char *buf = NULL, hb[KV_HDR_SIZE], head[KV_REC_HEAD], tail[4];
	int rc, dst = -1;
	kv_rec *one = NULL;
	if (s->readonly || !s->persisted)
		return coli_err_set(err, -EBADF, "%s: cannot compact a read-only or failed session", s->path);
	if ((rc = pread_full(s->fd, hb, sizeof hb, 0)) < 0)
		return coli_err_set(err, rc, "%s: read header: %s", s->path, strerror(-rc));
	uint64_t len = data_payload((uint64_t)s->n_tokens, s->n_layers, s->width);
	if (len > UINT32_MAX)
		return coli_err_set(err, -EFBIG, "%s: too many tokens to compact into one record", s->path);
	if ((rc = tmp_path(s->dir, s->name, tmp, sizeof tmp, err)) < 0)
		return rc;
	if (!(buf = malloc(KV_SCRATCH)) || !(one = malloc(sizeof *one))) {
		rc = coli_err_set(err, -ENOMEM, "out of memory");
		goto out;
	}
	dst = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (dst < 0) {
		rc = coli_err_set(err, -errno, "%s: %s", tmp, strerror(errno));
		goto out;
	}
	uint64_t doff = 0;
	uint32_t crc = 0;
	struct iovec iov = { hb, sizeof hb };
	if ((rc = pwritev_full(dst, &iov, 1, 0)) < 0)
		goto io;
	doff = KV_HDR_SIZE;
	if (s->n_tokens > 0) {
		put_u32(head, KV_TYPE_DATA);
		put_u32(head + 4, (uint32_t)len);
		put_u32(head + 8, (uint32_t)s->n_tokens);
		put_u32(head + 12, 0);
		crc = crc32c_update(0, head, sizeof head);
		iov = (struct iovec){ head, sizeof head };
		if ((rc = pwritev_full(dst, &iov, 1, doff)) < 0)
			goto io;
		doff += sizeof head;
		for (int i = 0; i < s->n_live; i++) {
			const kv_rec *r = &s->recs[s->live[i]];
			if ((rc = copy_range(s, dst, buf, r->off + KV_REC_HEAD, 4u * (uint64_t)r->live, &doff, &crc)) < 0)
				goto io;
		}
		for (uint32_t l = 0; l < s->n_layers; l++)
			for (int i = 0; i < s->n_live; i++) {
				const kv_rec *r = &s->recs[s->live[i]];
				if ((rc = copy_range(s, dst, buf, rows_offset(s, r, l, r->first),
						     (uint64_t)r->live * s->width * 4u, &doff, &crc)) < 0)
					goto io;
			}
		put_u32(tail, crc);
		iov = (struct iovec){ tail, sizeof tail };
		if ((rc = pwritev_full(dst, &iov, 1, doff)) < 0)
			goto io;
		doff += sizeof tail;
	}
	if (fsync(dst) < 0 || rename(tmp, s->path) < 0) {
		rc = -errno;
		goto io;
	}
	if ((rc = dir_fsync(s->dir)) < 0)
		coli_warn("%s: fsync: %s", s->dir, strerror(-rc));
	close(s->fd);
	s->fd = dst;
	dst = -1;
	*one = (kv_rec){ KV_HDR_SIZE, KV_TYPE_DATA, 0, (uint32_t)s->n_tokens, (uint32_t)s->n_tokens };
	free(s->recs);
	s->recs = one;
	s->n_recs = s->n_tokens > 0;
	s->cap_recs = 1;
	one = NULL;
	s->n_live = 0;
	if (s->n_recs)
		live_push(s, 0); /* cap_live >= 1 already when there were tokens */
	s->end = doff;
	s->dirty = 0;
	rc = 0;
	goto out;
io:
	coli_err_set(err, rc, "%s: compact: %s", tmp, strerror(-rc));
	unlink(tmp);
out:
	if (dst >= 0)
		close(dst);
	free(buf);
	free(one);
	return rc;
}

int kv_session_n_tokens(const kv_session *s) { return s->n_tokens; }
int kv_session_persisted(const kv_session *s) { return s->persisted; }
uint64_t kv_session_bytes(const kv_session *s) { return s->end; }
const char *kv_session_name(const kv_session *s) { return s->name; }
int kv_session_n_layers(const kv_session *s) { return (int)s->n_layers; }
int kv_session_width(const kv_session *s) { return (int)s->width; }

void kv_session_close(kv_session *s)
{
	if (!s)
		return;
	coli_err e = { 0 };
	if (kv_session_sync(s, &e) < 0)
		coli_warn("%s", e.msg);
	session_free(s);
}

/* ---- inspection ---- */

static int inspect_open(const char *path, int *fd, uint64_t *size, kv_header *h, coli_err *err)
{
	struct stat st;
	*fd = open(path, O_RDONLY | O_CLOEXEC);
	if (*fd < 0)
		return coli_err_set(err, -errno, "%s: %s", path, strerror(errno));
	if (fstat(*fd, &st) < 0) {
		int rc = coli_err_set(err, -errno, "%s: %s", path, strerror(errno));
		close(*fd);
		return rc;
	}
	*size = (uint64_t)st.st_size;
	int rc = header_read(*fd, path, *size, h, err);
	if (rc < 0)
		close(*fd);
	return rc;
}

int kv_file_inspect(const char *path, int flags, kv_file_report *rep, coli_err *err)
{
	kv_walk w = { 0 };
	int fd, rc;
	memset(rep, 0, sizeof *rep);
	if ((rc = inspect_open(path, &fd, &rep->file_bytes, &rep->hdr, err)) < 0)
		return rc;
	w.fd = fd;
	w.path = path;
	w.size = rep->file_bytes;
	w.n_layers = rep->hdr.n_layers;
	w.width = rep->hdr.width;
	w.verify = !!(flags & KV_INSPECT_VERIFY);
	if ((rc = walk(&w)) < 0) {
		coli_err_set(err, rc, "%s: read: %s", path, strerror(-rc));
		goto out;
	}
	rep->valid_bytes = w.end;
	rep->n_tokens = (int)w.n_tokens;
	rep->status = w.status;
	snprintf(rep->problem, sizeof rep->problem, "%s", w.problem);
	if ((flags & KV_INSPECT_RECORDS) && w.n_recs > 0) {
		if (!(rep->recs = calloc((size_t)w.n_recs, sizeof *rep->recs))) {
			rc = coli_err_set(err, -ENOMEM, "out of memory");
			goto out;
		}
		for (int i = 0; i < w.n_recs; i++) {
			const kv_rec *r = &w.recs[i];
			rep->recs[i] = (kv_record_info){
				.offset = r->off,
				.bytes = KV_REC_FRAME + (r->type == KV_TYPE_DATA ?
					 data_payload(r->n, w.n_layers, w.width) : 0),
				.type = r->type == KV_TYPE_DATA ? KV_REC_DATA : KV_REC_TRUNCATE,
				.first = r->first, .n = r->n, .live = r->live };
		}
		rep->n_recs = w.n_recs;
	}
out:
	free(w.recs);
	free(w.scratch);
	close(fd);
	return rc;
}

void kv_file_report_free(kv_file_report *rep)
{
	if (!rep)
		return;
	free(rep->recs);
	rep->recs = NULL;
	rep->n_recs = 0;
}

/* Replays the history from the framing, reading a record's token ids only
 * while the history still agrees with the query up to that record. */
int kv_file_match_prefix(const char *path, const char *fingerprint, const int32_t *tokens,
			 int n, int *n_match, coli_err *err)
{
	kv_header h;
	uint64_t size, off = KV_HDR_SIZE;
	int fd, rc = 0;
	int32_t buf[1024];
	*n_match = 0;
	if ((rc = inspect_open(path, &fd, &size, &h, err)) < 0)
		return rc;
	if (fingerprint && strcmp(fingerprint, h.fingerprint)) {
		close(fd);
		return coli_err_set(err, -ESTALE, "%s: another model's session", path);
	}
	kv_walk w = { .fd = fd, .size = size, .n_layers = h.n_layers, .width = h.width };
	uint32_t cur = 0, match = 0;
	unsigned char head[KV_REC_HEAD];
	while (size - off >= KV_REC_FRAME && (rc = pread_full(fd, head, sizeof head, off)) == 0 &&
	       frame_plausible(&w, off, head)) {
		uint32_t type = get_u32(head), cnt = get_u32(head + 8), first = get_u32(head + 12);
		if (type == KV_TYPE_TRUNC) {
			if (first > cur)
				break;
			cur = first;
			if (match > cur)
				match = cur;
		} else {
			if (first != cur)
				break;
			for (uint32_t i = 0; match == cur + i && i < cnt && match < (uint32_t)n;) {
				uint32_t k = cnt - i < 1024 ? cnt - i : 1024;
				if ((rc = pread_full(fd, buf, 4u * k, off + KV_REC_HEAD + 4u * i)) < 0)
					goto out;
				for (uint32_t j = 0; j < k && match < (uint32_t)n && buf[j] == tokens[match]; j++)
					match++;
				i += k;
			}
			cur += cnt;
		}
		off += KV_REC_FRAME + get_u32(head + 4);
	}
	rc = rc < 0 ? coli_err_set(err, rc, "%s: read: %s", path, strerror(-rc)) : 0;
	*n_match = (int)match;
out:
	close(fd);
	return rc;
}
