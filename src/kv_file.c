/* kv_file.c - the .kv session format: writer, loader, inspector.
 *
 * FORMAT (version 3; all integers little-endian; see also colitop-kv(5))
 *
 *   Header, 128 bytes at offset 0:
 *     0   8  magic "COLIKV\0\1"
 *     8   4  u32 format version (3); readers refuse newer versions and
 *            read versions 1 and 2 (see the index fields below)
 *    12   4  u32 header size (128); records start here
 *    16  64  model fingerprint: 64 lowercase hex chars, the sha256 of the
 *            container's manifest.json (no NUL)
 *    80   4  u32 n_layers
 *    84   4  u32 width W (kv_lora_rank + qk_rope_head_dim; version 2:
 *            + I, the index key at the end of every layer's row)
 *    88   4  u32 element type (0 = float32)
 *    92   4  u32 flags (0; reserved)
 *    96   8  i64 created, unix seconds
 *   104   4  u32 index width I: numbers of a token's DSA indexer key
 *            (0: no indexer; version 1: absent, 0). Version 2 kept it as
 *            the last I numbers of every layer's row (shared indexer
 *            layers: zeros); version 3 keeps it for the F layers that run
 *            their own indexer only, in parts after the layers' rows
 *   108   4  u32 index layers F (version 3; 0 when I is 0)
 *   112  12  reserved, zero
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
 *              then (version 3) the index keys, one part [n][I] per full
 *              indexer layer in layer order
 *            so P = 4n + 4*n*(n_layers*W + F*I)
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
#include "util_array.h"
#include "util_crc32c.h"
#include "kv_format.h"
#include "kv_store.h"

int kv_fmt_pread_full(int fd, void *buf, size_t len, uint64_t off)
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

#ifdef COLI_FAULT_INJECTION
/* Test builds: COLI_FAULT_KV_WRITE=N[:ENOSPC|:EDQUOT|:EIO] makes the Nth
 * write while it is set (counting from when it was set) store half of its
 * first buffer and fail with that error (default ENOSPC), as a full disk
 * does. Counting restarts whenever the variable is unset. */
static _Atomic int fault_writes;

static int fault_write(int fd, const struct iovec *iov, uint64_t off)
{
	const char *e = getenv("COLI_FAULT_KV_WRITE");
	if (!e || !*e) {
		fault_writes = 0;
		return 0;
	}
	if (++fault_writes != atoi(e))
		return 0;
	int code = strstr(e, ":EIO") ? EIO : strstr(e, ":EDQUOT") ? EDQUOT : ENOSPC;
	if (pwrite(fd, iov->iov_base, iov->iov_len / 2, (off_t)off) < 0)
		return -errno;
	return -code;
}
#endif

/* pwritev everything, resuming short writes (a file-size limit or a full
 * disk first shows up as a short write, then as the error). */
int kv_fmt_pwritev_full(int fd, struct iovec *iov, int cnt, uint64_t off)
{
#ifdef COLI_FAULT_INJECTION
	int fault = cnt > 0 ? fault_write(fd, iov, off) : 0;
	if (fault)
		return fault;
#endif
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

int kv_fmt_fingerprint_ok(const char *fp)
{
	if (!fp || strlen(fp) != KV_FINGERPRINT_LEN)
		return 0;
	for (int i = 0; i < KV_FINGERPRINT_LEN; i++)
		if (!((fp[i] >= '0' && fp[i] <= '9') || (fp[i] >= 'a' && fp[i] <= 'f')))
			return 0;
	return 1;
}

void kv_fmt_header_encode(unsigned char b[KV_HDR_SIZE], const kv_header *h)
{
	memset(b, 0, KV_HDR_SIZE);
	memcpy(b, KV_MAGIC, 8);
	kv_put_u32(b + 8, h->version);
	kv_put_u32(b + 12, KV_HDR_SIZE);
	memcpy(b + 16, h->fingerprint, KV_FINGERPRINT_LEN);
	kv_put_u32(b + 80, h->n_layers);
	kv_put_u32(b + 84, h->width);
	kv_put_u32(b + 88, h->elem_type);
	kv_put_u32(b + 96, (uint32_t)((uint64_t)h->created & 0xffffffffu));
	kv_put_u32(b + 100, (uint32_t)((uint64_t)h->created >> 32));
	kv_put_u32(b + 104, h->index_width);
	kv_put_u32(b + 108, h->index_layers);
	kv_put_u32(b + 124, crc32c_update(0, b, 124));
}

int kv_fmt_header_read(int fd, const char *path, uint64_t size, kv_header *h, coli_err *err)
{
	unsigned char b[KV_HDR_SIZE];
	if (size < KV_HDR_SIZE)
		return coli_err_set(err, -EBADMSG, "%s: not a KV session (%" PRIu64 " bytes, header needs %u)",
				    path, size, KV_HDR_SIZE);
	int rc = kv_fmt_pread_full(fd, b, sizeof b, 0);
	if (rc < 0)
		return coli_err_set(err, rc, "%s: read header: %s", path, strerror(-rc));
	if (memcmp(b, KV_MAGIC, 8))
		return coli_err_set(err, -EBADMSG, "%s: not a KV session (bad magic)", path);
	h->version = kv_get_u32(b + 8);
	if (h->version > KV_FORMAT_VERSION)
		return coli_err_set(err, -EPROTONOSUPPORT,
				    "%s: KV format version %u is newer than this build supports (%u)",
				    path, h->version, KV_FORMAT_VERSION);
	if (kv_get_u32(b + 124) != crc32c_update(0, b, 124))
		return coli_err_set(err, -EBADMSG, "%s: header checksum mismatch", path);
	h->header_size = kv_get_u32(b + 12);
	memcpy(h->fingerprint, b + 16, KV_FINGERPRINT_LEN);
	h->fingerprint[KV_FINGERPRINT_LEN] = '\0';
	h->n_layers = kv_get_u32(b + 80);
	h->width = kv_get_u32(b + 84);
	h->elem_type = kv_get_u32(b + 88);
	h->created = (int64_t)((uint64_t)kv_get_u32(b + 96) | (uint64_t)kv_get_u32(b + 100) << 32);
	h->index_width = h->version >= 2 ? kv_get_u32(b + 104) : 0;
	h->index_layers = h->version >= 3 ? kv_get_u32(b + 108) : 0;
	/* version 2: the key inside every row; 3: parts of their own */
	int index_ok = h->version < 3 ? h->index_width < h->width :
		       h->index_layers <= h->n_layers && h->index_width <= (1u << 20) &&
		       !h->index_layers == !h->index_width;
	if (h->version == 0 || h->header_size != KV_HDR_SIZE || h->n_layers == 0 ||
	    h->n_layers > 4096 || h->width == 0 || h->width > (1u << 20) || h->elem_type != 0 || !index_ok ||
	    !kv_fmt_fingerprint_ok(h->fingerprint))
		return coli_err_set(err, -EBADMSG, "%s: header fields out of range", path);
	return 0;
}

/* ---- record walk shared by open, inspect and prefix matching ---- */



static int kv_fmt_rec_push(kv_rec **recs, int *n, int *cap, kv_rec r)
{
	if (util_array_grow(recs, cap, *n + 1, 64))
		return -ENOMEM;
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
		int rc = kv_fmt_pread_full(w->fd, w->scratch, chunk, off);
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
		rc = kv_fmt_pread_full(w->fd, w->tokens + first, 4u * (size_t)n, p);
		if (rc < 0)
			return rc;
		crc = crc32c_update(crc, w->tokens + first, 4u * (size_t)n);
	} else if ((rc = crc_range(w, p, 4u * (uint64_t)n, &crc)) < 0) {
		return rc;
	}
	p += 4u * (uint64_t)n;
	const kv_geom g = kv_walk_geom(w);
	for (uint32_t l = 0; l < kv_geom_slots(g) && len; l++) {
		const uint32_t sw = kv_geom_slot_width(g, l);
		const size_t row_bytes = (size_t)n * sw * 4u;
		if (w->rows) {
			float *dst = w->rows[l] + (size_t)first * sw;
			if ((rc = kv_fmt_pread_full(w->fd, dst, row_bytes, p)) < 0)
				return rc;
			crc = crc32c_update(crc, dst, row_bytes);
		} else if ((rc = crc_range(w, p, row_bytes, &crc)) < 0) {
			return rc;
		}
		p += row_bytes;
	}
	unsigned char c[4];
	if ((rc = kv_fmt_pread_full(w->fd, c, 4, p)) < 0)
		return rc;
	return kv_get_u32(c) == crc;
}

/* Framing checks that need no state: type, length vs file size and shape. */
int kv_fmt_frame_plausible(const kv_walk *w, uint64_t off, const unsigned char *head)
{
	uint32_t type = kv_get_u32(head), len = kv_get_u32(head + 4), n = kv_get_u32(head + 8);
	if (w->size - off < KV_REC_FRAME || (uint64_t)len > w->size - off - KV_REC_FRAME)
		return 0;
	if (type == KV_TYPE_TRUNC)
		return len == 0 && n == 0;
	if (type == KV_TYPE_DATA)
		return n > 0 && (uint64_t)len == kv_fmt_data_payload(n, kv_walk_geom(w));
	return 0;
}

/* CRC of a framed record read through the scratch buffer: 1 ok, 0 bad. */
static int record_crc_ok(kv_walk *w, uint64_t off, const unsigned char *head)
{
	uint32_t crc = crc32c_update(0, head, KV_REC_HEAD), len = kv_get_u32(head + 4);
	unsigned char c[4];
	int rc = crc_range(w, off + KV_REC_HEAD, len, &crc);
	if (rc == 0)
		rc = kv_fmt_pread_full(w->fd, c, 4, off + KV_REC_HEAD + len);
	return rc < 0 ? rc : kv_get_u32(c) == crc;
}

/* Is there any valid record at a 4-aligned offset after `bad`? */
static int valid_after(kv_walk *w, uint64_t bad)
{
	if (w->size > bad + 4 && scratch_get(w, w->size - bad - 4) < 0)
		return 1; /* cannot tell: be safe, refuse */
	for (uint64_t base = bad + 4; base + KV_REC_FRAME <= w->size;) {
		size_t chunk = (size_t)((w->size - base) > w->scratch_cap ? w->scratch_cap : (w->size - base));
		chunk &= ~(size_t)3;
		if (kv_fmt_pread_full(w->fd, w->scratch, chunk, base) < 0)
			return 1; /* cannot tell: be safe, refuse */
		uint64_t next = base + chunk;
		for (size_t i = 0; i + 4 <= chunk; i += 4) {
			uint32_t t = kv_get_u32(w->scratch + i);
			if (t != KV_TYPE_DATA && t != KV_TYPE_TRUNC)
				continue;
			uint64_t off = base + i;
			unsigned char head[KV_REC_HEAD];
			if (w->size - off < KV_REC_FRAME || kv_fmt_pread_full(w->fd, head, sizeof head, off) < 0)
				continue;
			if (!kv_fmt_frame_plausible(w, off, head))
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

/* A record at `off` that is whole and whose CRC holds over the length it
 * states, although it failed the framing checks: the header's shape
 * (n_layers x width) does not describe it. No crash writes that (a torn
 * append leaves a prefix of a record the header describes), so it is a
 * damaged header, never a torn tail. */
static int intact_misfit(kv_walk *w, uint64_t off)
{
	unsigned char head[KV_REC_HEAD];
	if (w->size - off < KV_REC_FRAME || kv_fmt_pread_full(w->fd, head, sizeof head, off) < 0)
		return 0;
	uint32_t type = kv_get_u32(head), len = kv_get_u32(head + 4);
	if ((type != KV_TYPE_DATA && type != KV_TYPE_TRUNC) || (uint64_t)len > w->size - off - KV_REC_FRAME)
		return 0;
	return record_crc_ok(w, off, head) == 1;
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

int kv_fmt_walk(kv_walk *w)
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
		int rc = kv_fmt_pread_full(w->fd, head, sizeof head, off);
		if (rc < 0)
			return rc;
		if (!kv_fmt_frame_plausible(w, off, head)) {
			if (intact_misfit(w, off)) {
				w->end = off;
				w->status = KV_FILE_CORRUPT;
				snprintf(w->problem, sizeof w->problem,
					 "header does not match its records: the record at byte %" PRIu64
					 " is intact (CRC ok) but does not fit the header's %u layers x %u floats"
					 " + %u index keys x %u", off, w->n_layers, w->width, w->index_layers,
					 w->index_layers ? w->index_width : 0);
			} else {
				walk_bad(w, off, "bad framing");
			}
			return 0;
		}
		uint32_t type = kv_get_u32(head), len = kv_get_u32(head + 4);
		uint32_t n = kv_get_u32(head + 8), first = kv_get_u32(head + 12);
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
				ok = kv_fmt_pread_full(w->fd, c, 4, off + KV_REC_HEAD);
				if (ok == 0)
					ok = kv_get_u32(c) == crc32c_update(0, head, KV_REC_HEAD);
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
		if ((rc = kv_fmt_rec_push(&w->recs, &w->n_recs, &w->cap_recs, r)) < 0)
			return rc;
		off += KV_REC_FRAME + len;
	}
	w->end = off;
	return 0;
}

/* Upper bound of token positions, from the framing only (sizes arrays).
 * Follows the history like kv_fmt_walk() and stops where it would, so a damaged
 * position field can never ask for a huge allocation. */
uint32_t kv_fmt_walk_bound(kv_walk *w)
{
	uint64_t off = KV_HDR_SIZE;
	uint32_t bound = 0, cur = 0;
	unsigned char head[KV_REC_HEAD];
	while (w->size - off >= KV_REC_FRAME && kv_fmt_pread_full(w->fd, head, sizeof head, off) == 0 &&
	       kv_fmt_frame_plausible(w, off, head)) {
		uint32_t n = kv_get_u32(head + 8), first = kv_get_u32(head + 12);
		if (kv_get_u32(head) == KV_TYPE_TRUNC) {
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
		off += KV_REC_FRAME + kv_get_u32(head + 4);
	}
	return bound;
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
	int rc = kv_fmt_header_read(*fd, path, *size, h, err);
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
	w.index_layers = rep->hdr.index_layers;
	w.index_width = rep->hdr.index_width;
	w.verify = !!(flags & KV_INSPECT_VERIFY);
	if ((rc = kv_fmt_walk(&w)) < 0) {
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
					 kv_fmt_data_payload(r->n, kv_walk_geom(&w)) : 0),
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
	kv_walk w = { .fd = fd, .size = size, .n_layers = h.n_layers, .width = h.width,
		      .index_layers = h.index_layers, .index_width = h.index_width };
	uint32_t cur = 0, match = 0;
	unsigned char head[KV_REC_HEAD];
	while (size - off >= KV_REC_FRAME && (rc = kv_fmt_pread_full(fd, head, sizeof head, off)) == 0 &&
	       kv_fmt_frame_plausible(&w, off, head)) {
		uint32_t type = kv_get_u32(head), cnt = kv_get_u32(head + 8), first = kv_get_u32(head + 12);
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
				if ((rc = kv_fmt_pread_full(fd, buf, 4u * k, off + KV_REC_HEAD + 4u * i)) < 0)
					goto out;
				for (uint32_t j = 0; j < k && match < (uint32_t)n && buf[j] == tokens[match]; j++)
					match++;
				i += k;
			}
			cur += cnt;
		}
		off += KV_REC_FRAME + kv_get_u32(head + 4);
	}
	rc = rc < 0 ? coli_err_set(err, rc, "%s: read: %s", path, strerror(-rc)) : 0;
	*n_match = (int)match;
out:
	close(fd);
	return rc;
}
