/* kv_session_live.c - a session's live history read back by position:
 * rows on demand (KV_OPEN_NO_ROWS) and compaction, which rewrites the
 * live tokens into a new file and renames it over the session's. */
#include "config.h"

#include "kv_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "coli_log.h"
#include "util_crc32c.h"
#include "kv_format.h"
#include "kv_reader.h"
#include "kv_session_int.h"
#include "util_file.h"

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

static uint64_t rows_offset(const kv_session *s, const kv_rec *r, uint32_t slot, uint32_t pos)
{
	const kv_geom g = session_geom(s);
	return r->off + KV_REC_HEAD + 4u * (uint64_t)r->n +
	       (kv_geom_slot_start(g, r->n, slot) + (uint64_t)(pos - r->first) * kv_geom_slot_width(g, slot)) * 4u;
}

/* Rows [pos, pos + n) of one slot into dst (the row of pos first): one
 * read per record the range spans (a record holds a slot's rows of
 * consecutive positions back to back), queued on rd or, without one,
 * pread at once. *total grows by the bytes. The range is the caller's to
 * check. */
static int read_range(kv_session *s, kv_reader *rd, uint32_t slot, uint32_t pos, uint32_t n, float *dst,
		      uint64_t *total, coli_err *err)
{
	const uint32_t sw = kv_geom_slot_width(session_geom(s), slot), stop = pos + n;
	while (pos < stop) {
		const kv_rec *r = live_find(s, pos);
		if (!r)
			return coli_err_set(err, -EIO, "%s: no record holds token %u", s->path, pos);
		uint32_t take = r->first + r->live - pos;
		if (take > stop - pos)
			take = stop - pos;
		const size_t len = (size_t)take * sw * 4u;
		const uint64_t off = rows_offset(s, r, slot, pos);
		int rc = rd ? kv_reader_add(rd, s->fd, dst, len, off) : kv_fmt_pread_full(s->fd, dst, len, off);
		if (rc < 0)
			return coli_err_set(err, rc, "%s: read rows: %s", s->path, strerror(-rc));
		*total += len;
		dst += (size_t)take * sw;
		pos += take;
	}
	return 0;
}

int kv_session_read_rows(kv_session *s, int layer, int first_token, int n, float *out,
			 coli_err *err)
{
	if (layer < 0 || (uint32_t)layer >= kv_geom_slots(session_geom(s)) || first_token < 0 || n < 0 ||
	    (int64_t)first_token + n > s->n_tokens)
		return coli_err_set(err, -EINVAL, "%s: rows %d+%d of layer %d out of range (%d tokens)",
				    s->path, first_token, n, layer, s->n_tokens);
	uint64_t total = 0;
	return read_range(s, NULL, (uint32_t)layer, (uint32_t)first_token, (uint32_t)n, out, &total, err);
}

int kv_session_read_runs(kv_session *s, kv_reader *rd, int slot, const int *runs, int n_runs, float *out,
			 uint64_t *bytes, coli_err *err)
{
	if (slot < 0 || (uint32_t)slot >= kv_geom_slots(session_geom(s)))
		return coli_err_set(err, -EINVAL, "%s: no slot %d", s->path, slot);
	const uint32_t sw = kv_geom_slot_width(session_geom(s), (uint32_t)slot);
	uint64_t total = 0;
	int rc = 0;
	for (int i = 0; i < n_runs && !rc; i++) {
		const int first = runs[2 * i], n = runs[2 * i + 1];
		if (first < 0 || n < 0 || (int64_t)first + n > s->n_tokens) {
			rc = coli_err_set(err, -EINVAL, "%s: rows %d+%d of slot %d out of range (%d tokens)", s->path,
					  first, n, slot, s->n_tokens);
			break;
		}
		/* each row lands at its position in out */
		rc = read_range(s, rd, (uint32_t)slot, (uint32_t)first, (uint32_t)n, out + (size_t)first * sw, &total,
				err);
	}
	if (rd) {
		/* every queued read finishes before the buffer is used or the
		 * call returns, also after an error */
		int wrc = kv_reader_wait(rd);
		if (wrc < 0 && !rc)
			rc = coli_err_set(err, wrc, "%s: read rows: %s", s->path, strerror(-wrc));
	}
	if (bytes)
		*bytes += rc ? 0 : total;
	return rc;
}

/* Copy [off, off+len) of the session file to dst at *doff, extending crc. */
static int copy_range(kv_session *s, int dst, unsigned char *buf, uint64_t off, uint64_t len,
		      uint64_t *doff, uint32_t *crc)
{
	while (len) {
		size_t chunk = len > KV_SCRATCH ? KV_SCRATCH : (size_t)len;
		int rc = kv_fmt_pread_full(s->fd, buf, chunk, off);
		if (rc < 0)
			return rc;
		*crc = crc32c_update(*crc, buf, chunk);
		struct iovec iov = { buf, chunk };
		if ((rc = kv_fmt_pwritev_full(dst, &iov, 1, *doff)) < 0)
			return rc;
		off += chunk; len -= chunk; *doff += chunk;
	}
	return 0;
}

/* Copy positions [a, b) of the live history (token ids when layer < 0,
 * else that layer's rows), starting the search at live segment *si. */
static int copy_positions(kv_session *s, int dst, unsigned char *buf, int layer, uint32_t a,
			  uint32_t b, int *si, uint64_t *doff, uint32_t *crc)
{
	while (*si < s->n_live && s->recs[s->live[*si]].first + s->recs[s->live[*si]].live <= a)
		(*si)++;
	for (int i = *si; i < s->n_live; i++) {
		const kv_rec *r = &s->recs[s->live[i]];
		if (r->first >= b)
			break;
		uint32_t lo = a > r->first ? a : r->first, hi = r->first + r->live < b ? r->first + r->live : b;
		uint64_t off = layer < 0 ? r->off + KV_REC_HEAD + 4u * (uint64_t)(lo - r->first)
					 : rows_offset(s, r, (uint32_t)layer, lo);
		uint64_t len = (uint64_t)(hi - lo) *
			       (layer < 0 ? 4u : kv_geom_slot_width(session_geom(s), (uint32_t)layer) * 4u);
		int rc = copy_range(s, dst, buf, off, len, doff, crc);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* Records written by a compaction hold at most this many tokens, which
 * keeps each one far below the 4 GiB a u32 length allows (GLM-5.2:
 * 4096 x 176 KiB = 736 MB). */
#define KV_COMPACT_TOKENS 4096u

int kv_session_compact(kv_session *s, coli_err *err)
{
	char tmp[PATH_MAX + 32];
	unsigned char *buf = NULL, hb[KV_HDR_SIZE], head[KV_REC_HEAD], tail[4];
	int rc, dst = -1, nchunks = (int)((s->n_tokens + KV_COMPACT_TOKENS - 1) / KV_COMPACT_TOKENS);
	kv_rec *nrecs = NULL;
	int *nlive = NULL;
	if (s->readonly || !s->persisted)
		return coli_err_set(err, -EBADF, "%s: cannot compact a read-only or failed session", s->path);
	if ((rc = kv_fmt_pread_full(s->fd, hb, sizeof hb, 0)) < 0)
		return coli_err_set(err, rc, "%s: read header: %s", s->path, strerror(-rc));
	if ((rc = kv_session_tmp_path(s->dir, s->name, tmp, sizeof tmp, err)) < 0)
		return rc;
	size_t nc = nchunks ? (size_t)nchunks : 1;
	if (!(buf = malloc(KV_SCRATCH)) || !(nrecs = malloc(nc * sizeof *nrecs)) ||
	    !(nlive = malloc(nc * sizeof *nlive))) {
		rc = coli_err_set(err, -ENOMEM, "out of memory");
		goto out;
	}
	dst = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (dst < 0) {
		rc = coli_err_set(err, -errno, "%s: %s", tmp, strerror(errno));
		goto out;
	}
	struct iovec iov = { hb, sizeof hb };
	if ((rc = kv_fmt_pwritev_full(dst, &iov, 1, 0)) < 0)
		goto io;
	uint64_t doff = KV_HDR_SIZE;
	for (int c = 0; c < nchunks; c++) {
		uint32_t a = (uint32_t)c * KV_COMPACT_TOKENS, b = a + KV_COMPACT_TOKENS;
		if (b > (uint32_t)s->n_tokens)
			b = (uint32_t)s->n_tokens;
		uint64_t len = kv_fmt_data_payload(b - a, session_geom(s));
		if (len > UINT32_MAX) {
			rc = -EFBIG;
			goto io;
		}
		nrecs[c] = (kv_rec){ doff, KV_TYPE_DATA, a, b - a, b - a };
		nlive[c] = c;
		kv_put_u32(head, KV_TYPE_DATA);
		kv_put_u32(head + 4, (uint32_t)len);
		kv_put_u32(head + 8, b - a);
		kv_put_u32(head + 12, a);
		uint32_t crc = crc32c_update(0, head, sizeof head);
		iov = (struct iovec){ head, sizeof head };
		if ((rc = kv_fmt_pwritev_full(dst, &iov, 1, doff)) < 0)
			goto io;
		doff += sizeof head;
		for (int layer = -1; layer < (int)kv_geom_slots(session_geom(s)); layer++) {
			int si = 0;
			if ((rc = copy_positions(s, dst, buf, layer, a, b, &si, &doff, &crc)) < 0)
				goto io;
		}
		kv_put_u32(tail, crc);
		iov = (struct iovec){ tail, sizeof tail };
		if ((rc = kv_fmt_pwritev_full(dst, &iov, 1, doff)) < 0)
			goto io;
		doff += sizeof tail;
	}
	if (fsync(dst) < 0 || rename(tmp, s->path) < 0) {
		rc = -errno;
		goto io;
	}
	coli_err de = { 0 };
	if (coli_fsync_dir(s->dir, &de) < 0)
		coli_warn("%s", de.msg); /* renamed already: the new file is the session's */
	close(s->fd);
	s->fd = dst;
	dst = -1;
	free(s->recs);
	free(s->live);
	s->recs = nrecs;
	s->live = nlive;
	s->n_recs = s->n_live = nchunks;
	s->cap_recs = s->cap_live = (int)nc;
	nrecs = NULL;
	nlive = NULL;
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
	free(nrecs);
	free(nlive);
	return rc;
}
