/* kv_session.c - one persisted KV session: create, open (load and
 * repair), append, truncate, sync; rows on demand and compaction are in
 * kv_session_live.c. The format is in kv_file.c; the public contract in
 * kv_file.h. */
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

#include "kv_cache_dir.h"
#include "coli_log.h"
#include "util_array.h"
#include "util_crc32c.h"
#include "kv_format.h"
#include "kv_store.h"
#include "kv_session_int.h"
#include "util_file.h"

/* dir/.NAME.kv.tmp.PID: hidden (names cannot start with '.'), per process. */
int kv_session_tmp_path(const char *dir, const char *name, char *out, size_t cap, coli_err *err)
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
	if (util_array_grow(&s->live, &s->cap_live, s->n_live + 1, 64))
		return -ENOMEM;
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
	return kv_session_create_indexed(dir, name, fingerprint, n_layers, width, 0, 0, flags, out, err);
}

int kv_session_create_indexed(const char *dir, const char *name, const char *fingerprint,
			      int n_layers, int width, int index_layers, int index_width, int flags,
			      kv_session **out, coli_err *err)
{
	kv_session *s = NULL;
	char tmp[PATH_MAX + 32];
	int rc, tfd = -1;
	*out = NULL;
	if (!kv_fmt_fingerprint_ok(fingerprint))
		return coli_err_set(err, -EINVAL, "session %s: model fingerprint must be 64 lowercase hex chars", name);
	if (n_layers <= 0 || width <= 0 || n_layers > 4096 || width > (1 << 20) || index_layers < 0 ||
	    index_layers > n_layers || index_width < 0 || index_width > (1 << 20) || !index_layers != !index_width)
		return coli_err_set(err, -EINVAL, "session %s: bad shape %d layers x %d + %d index keys x %d",
				    name, n_layers, width, index_layers, index_width);
	if ((rc = session_new(dir, name, flags, &s, err)) < 0)
		return rc;
	if ((rc = kv_mkdirs(dir, err)) < 0 || (rc = kv_store_lock(dir, name, &s->lock_fd, err)) < 0)
		goto fail;
	if (!(flags & KV_CREATE_OVERWRITE) && access(s->path, F_OK) == 0) {
		rc = coli_err_set(err, -EEXIST, "%s: session already exists", s->path);
		goto fail;
	}
	if ((rc = kv_session_tmp_path(dir, name, tmp, sizeof tmp, err)) < 0)
		goto fail;
	tfd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (tfd < 0) {
		rc = coli_err_set(err, -errno, "%s: %s", tmp, strerror(errno));
		goto fail;
	}
	kv_header h = { .version = KV_FORMAT_VERSION, .header_size = KV_HDR_SIZE,
			.n_layers = (uint32_t)n_layers, .width = (uint32_t)width,
			.created = (int64_t)time(NULL), .index_width = (uint32_t)index_width,
			.index_layers = (uint32_t)index_layers };
	memcpy(h.fingerprint, fingerprint, KV_FINGERPRINT_LEN + 1);
	unsigned char b[KV_HDR_SIZE];
	kv_fmt_header_encode(b, &h);
	struct iovec iov = { b, sizeof b };
	if ((rc = kv_fmt_pwritev_full(tfd, &iov, 1, 0)) < 0 || (fsync(tfd) < 0 && (rc = -errno))) {
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
	if ((rc = coli_fsync_dir(dir, err)) < 0)
		goto fail;
	s->fd = tfd;
	s->n_layers = (uint32_t)n_layers;
	s->width = (uint32_t)width;
	s->index_layers = (uint32_t)index_layers;
	s->index_width = (uint32_t)index_width;
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
		for (int i = 0; i < l->n_layers + l->index_layers; i++)
			free(l->rows[i]);
	free(l->rows);
	free(l->tokens);
	memset(l, 0, sizeof *l);
}

static int loaded_alloc(kv_loaded *l, kv_geom g, uint32_t cap, int rows)
{
	size_t c = cap ? cap : 1;
	l->n_layers = (int)g.layers;
	l->width = (int)g.width;
	l->index_layers = (int)g.ilayers;
	l->index_width = (int)g.iwidth;
	if (!(l->tokens = malloc(c * sizeof *l->tokens)))
		return -ENOMEM;
	if (!rows)
		return 0;
	if (!(l->rows = calloc(kv_geom_slots(g), sizeof *l->rows)))
		return -ENOMEM;
	for (uint32_t i = 0; i < kv_geom_slots(g); i++)
		if (!(l->rows[i] = malloc(c * kv_geom_slot_width(g, i) * sizeof(float))))
			return -ENOMEM;
	return 0;
}

int kv_session_open(const char *dir, const char *name, const char *expected_fingerprint,
		    int n_layers, int width, int flags, kv_session **out, kv_loaded *loaded,
		    coli_err *err)
{
	return kv_session_open_indexed(dir, name, expected_fingerprint, n_layers, width, 0, 0, flags, out,
				       loaded, err);
}

/* Why a file of header h cannot hold the rows of a model whose shape the
 * opener gave (width > 0): 0 when it can. */
static int shape_refused(const kv_session *s, const kv_header *h, int n_layers, int width, int index_layers,
			 int index_width, coli_err *err)
{
	if (width <= 0)
		return 0;
	if (h->version == 2 && h->index_width > 0)
		return coli_err_set(err, -EINVAL, "%s: KV format 2 keeps a DSA index key in every layer's row; "
				    "this build keeps them for the layers that run their own indexer only "
				    "(format 3): re-create the session", s->path);
	if (h->index_layers == 0 && index_layers > 0 && (n_layers <= 0 || (uint32_t)n_layers == h->n_layers))
		return coli_err_set(err, -EINVAL, "%s: KV format %u has no DSA indexer keys, which this model "
				    "needs (%d layers run their own indexer): re-create the session", s->path,
				    h->version, index_layers);
	if ((n_layers > 0 && (uint32_t)n_layers != h->n_layers) || (uint32_t)width != h->width ||
	    (uint32_t)index_layers != h->index_layers || (index_layers && (uint32_t)index_width != h->index_width))
		return coli_err_set(err, -EINVAL, "%s: shape %u layers x %u + %u index keys x %u does not match "
				    "the model's %d x %d + %d x %d", s->path, h->n_layers, h->width, h->index_layers,
				    h->index_layers ? h->index_width : 0, n_layers, width, index_layers, index_width);
	return 0;
}

int kv_session_open_indexed(const char *dir, const char *name, const char *expected_fingerprint,
			    int n_layers, int width, int index_layers, int index_width, int flags,
			    kv_session **out, kv_loaded *loaded, coli_err *err)
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
	if ((rc = kv_fmt_header_read(s->fd, s->path, (uint64_t)st.st_size, &h, err)) < 0)
		goto out;
	if (expected_fingerprint && strcmp(expected_fingerprint, h.fingerprint)) {
		rc = coli_err_set(err, -ESTALE, "%s: made by another model (fingerprint %.12s, this model %.12s)",
				  s->path, h.fingerprint, expected_fingerprint);
		goto out;
	}
	if ((rc = shape_refused(s, &h, n_layers, width, index_layers, index_width, err)) < 0)
		goto out;
	s->n_layers = h.n_layers;
	s->width = h.width;
	s->index_layers = h.index_layers;
	s->index_width = h.index_layers ? h.index_width : 0;
	w.fd = s->fd;
	w.path = s->path;
	w.size = (uint64_t)st.st_size;
	w.n_layers = h.n_layers;
	w.width = h.width;
	w.index_layers = s->index_layers;
	w.index_width = s->index_width;
	w.verify = 1;
	if (loaded) {
		w.cap = kv_fmt_walk_bound(&w);
		if ((rc = loaded_alloc(loaded, session_geom(s), w.cap, !(flags & KV_OPEN_NO_ROWS))) < 0) {
			coli_err_set(err, rc, "%s: cannot allocate %u tokens of KV", s->path, w.cap);
			goto out;
		}
		w.tokens = loaded->tokens;
		w.rows = loaded->rows;
	}
	if ((rc = kv_fmt_walk(&w)) < 0) {
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

/* Room for one more record in both tables, taken before writing so that
 * a record on disk is always in the tables too. */
static int reserve(kv_session *s, coli_err *err)
{
	if (util_array_grow(&s->recs, &s->cap_recs, s->n_recs + 1, 64) ||
	    util_array_grow(&s->live, &s->cap_live, s->n_live + 1, 64))
		return coli_err_set(err, -ENOMEM, "out of memory");
	return 0;
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
	int rc;
	if (s->readonly)
		return coli_err_set(err, -EBADF, "%s: opened read-only", s->path);
	if (!s->persisted)
		return skip_unpersisted(s); /* the engine's history moved on without us */
	if (n <= 0 || (int64_t)s->n_tokens + n > INT_MAX)
		return coli_err_set(err, -EINVAL, "%s: bad token count %d", s->path, n);
	if ((rc = reserve(s, err)) < 0)
		return rc;
	const kv_geom g = session_geom(s);
	const uint32_t slots = kv_geom_slots(g);
	uint64_t len = kv_fmt_data_payload((uint64_t)n, g);
	if (len > UINT32_MAX)
		return coli_err_set(err, -EFBIG, "%s: record of %d tokens too large; append fewer", s->path, n);
	unsigned char head[KV_REC_HEAD], tail[4];
	kv_put_u32(head, KV_TYPE_DATA);
	kv_put_u32(head + 4, (uint32_t)len);
	kv_put_u32(head + 8, (uint32_t)n);
	kv_put_u32(head + 12, (uint32_t)s->n_tokens);
	uint32_t crc = crc32c_update(0, head, sizeof head);
	crc = crc32c_update(crc, tokens, (size_t)n * 4u);
	for (uint32_t l = 0; l < slots; l++)
		crc = crc32c_update(crc, layer_rows[l], (size_t)n * kv_geom_slot_width(g, l) * sizeof(float));
	kv_put_u32(tail, crc);
	/* Small fixed vectors would do for most configs; the layer count is
	 * runtime, so the iovec array is sized per call (per record, not per
	 * token; the engine appends a whole turn or step at once). */
	int cnt = (int)slots + 3;
	struct iovec stackv[256], *iov = cnt <= 256 ? stackv : malloc((size_t)cnt * sizeof *iov);
	if (!iov)
		return coli_err_set(err, -ENOMEM, "out of memory");
	iov[0] = (struct iovec){ head, sizeof head };
	iov[1] = (struct iovec){ (void *)tokens, (size_t)n * 4u };
	for (uint32_t l = 0; l < slots; l++)
		iov[2 + l] = (struct iovec){ (void *)layer_rows[l], (size_t)n * kv_geom_slot_width(g, l) * sizeof(float) };
	iov[cnt - 1] = (struct iovec){ tail, sizeof tail };
	rc = kv_fmt_pwritev_full(s->fd, iov, cnt, s->end);
	if (iov != stackv)
		free(iov);
	if (rc < 0)
		return write_failed(s, rc, "append", err);
	s->recs[s->n_recs++] = (kv_rec){ s->end, KV_TYPE_DATA, (uint32_t)s->n_tokens, (uint32_t)n, (uint32_t)n };
	s->live[s->n_live++] = s->n_recs - 1;
	s->end += KV_REC_FRAME + len;
	s->n_tokens += n;
	s->dirty = 1;
	if (s->flags & KV_SYNC_EACH)
		return kv_session_sync(s, err);
	return 0;
}

int kv_session_truncate_tokens(kv_session *s, int n_keep, coli_err *err)
{
	int rc;
	if (s->readonly)
		return coli_err_set(err, -EBADF, "%s: opened read-only", s->path);
	if (!s->persisted)
		return skip_unpersisted(s);
	if (n_keep < 0 || n_keep > s->n_tokens)
		return coli_err_set(err, -EINVAL, "%s: cannot keep %d of %d tokens", s->path, n_keep, s->n_tokens);
	if (n_keep == s->n_tokens)
		return 0;
	if ((rc = reserve(s, err)) < 0)
		return rc;
	unsigned char rec[KV_REC_FRAME];
	kv_put_u32(rec, KV_TYPE_TRUNC);
	kv_put_u32(rec + 4, 0);
	kv_put_u32(rec + 8, 0);
	kv_put_u32(rec + 12, (uint32_t)n_keep);
	kv_put_u32(rec + 16, crc32c_update(0, rec, KV_REC_HEAD));
	struct iovec iov = { rec, sizeof rec };
	rc = kv_fmt_pwritev_full(s->fd, &iov, 1, s->end);
	if (rc < 0)
		return write_failed(s, rc, "truncate", err);
	s->recs[s->n_recs++] = (kv_rec){ s->end, KV_TYPE_TRUNC, (uint32_t)n_keep, 0, 0 };
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

int kv_session_n_tokens(const kv_session *s) { return s->n_tokens; }
int kv_session_persisted(const kv_session *s) { return s->persisted; }
uint64_t kv_session_bytes(const kv_session *s) { return s->end; }

int kv_session_fstat(const kv_session *s, struct stat *st)
{
	return fstat(s->fd, st) < 0 ? -errno : 0;
}

uint64_t kv_session_dead_bytes(const kv_session *s)
{
	uint64_t dead = 0;
	for (int i = 0; i < s->n_recs; i++) {
		const kv_rec *r = &s->recs[i];
		if (r->type == KV_TYPE_TRUNC)
			dead += KV_REC_FRAME;
		else
			dead += kv_fmt_data_payload(r->n - r->live, session_geom(s)) +
				(r->live ? 0 : KV_REC_FRAME);
	}
	return dead;
}
const char *kv_session_name(const kv_session *s) { return s->name; }
int kv_session_n_layers(const kv_session *s) { return (int)s->n_layers; }
int kv_session_width(const kv_session *s) { return (int)s->width; }
int kv_session_index_layers(const kv_session *s) { return (int)s->index_layers; }
int kv_session_index_width(const kv_session *s) { return (int)s->index_width; }

void kv_session_close(kv_session *s)
{
	if (!s)
		return;
	coli_err e = { 0 };
	if (kv_session_sync(s, &e) < 0)
		coli_warn("%s", e.msg);
	session_free(s);
}
