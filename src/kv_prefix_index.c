/* kv_prefix_index.c - see kv_prefix_index.h.
 *
 * Threads. `mu` guards the entries and the name table. The refresher (or
 * a caller of kv_prefix_index_find) never holds it across disk access:
 * for a file that changed it copies the entry under the lock, reads the
 * new records into the copy without it, and swaps the copy in under the
 * lock only if nobody changed the entry meanwhile (its `ver`); else the
 * copy is dropped and the next event reads again. So the engine thread
 * holds `mu` for a lookup (a scan of histories in RAM) or a note (a copy
 * of one history), and waits at most for another such short section.
 *
 * Removal. A directory pass numbers itself (`pass`); every entry it finds,
 * and every entry the engine notes meanwhile, is stamped with that number,
 * and at the end of the pass the unstamped ones (files gone) are removed.
 * An inotify event for a file that no longer exists removes its entry. */
#include "config.h"

#include "kv_prefix_index.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "coli_log.h"
#include "kv_format.h"
#include "kv_store.h"
#include "util_array.h"

/* Without inotify (or before the directory exists): a pass this often. */
#define IX_POLL_MS 1000

typedef struct ix_entry {
	char name[KV_NAME_MAX + 1];
	dev_t dev;
	ino_t ino;
	uint64_t end;                /* records read up to this offset */
	char fingerprint[KV_FINGERPRINT_LEN + 1];
	uint32_t n_layers, width, index_layers, index_width;
	int32_t *hist;               /* live token history [len] */
	uint32_t len, cap;
	int bad;                     /* header unusable: skipped until replaced */
	uint64_t ver;                /* ix->clock at its last change */
	uint64_t seen;               /* the pass that last found it */
} ix_entry;

struct kv_prefix_index {
	char dir[PATH_MAX];
	pthread_mutex_t mu;
	/* under mu */
	ix_entry *e;
	int n, cap;
	/* name -> entry: open addressing over e[] (slot = index + 1, 0 empty),
	 * at most half full; rebuilt when it grows or entries are removed. A
	 * refresh looks up every file of the directory, so a linear search
	 * would make it quadratic in the number of sessions. */
	int *slot;
	uint32_t mask;
	uint64_t clock, pass;
	/* the refresher; wake[1] is written to stop it or ask for a pass */
	pthread_t thread;
	int watching;
	int wake[2];
	_Atomic int stop, rescan;
	_Atomic uint64_t passes;
};

int kv_prefix_index_new(const char *dir, kv_prefix_index **out, coli_err *err)
{
	kv_prefix_index *ix = calloc(1, sizeof *ix);
	*out = NULL;
	if (!ix)
		return coli_err_set(err, -ENOMEM, "out of memory");
	if (strlen(dir) >= sizeof ix->dir) {
		free(ix);
		return coli_err_set(err, -ENAMETOOLONG, "%s: path too long", dir);
	}
	snprintf(ix->dir, sizeof ix->dir, "%s", dir);
	pthread_mutex_init(&ix->mu, NULL);
	ix->wake[0] = ix->wake[1] = -1;
	*out = ix;
	return 0;
}

static void ix_wake(kv_prefix_index *ix)
{
	char c = 1;
	if (ix->wake[1] >= 0 && write(ix->wake[1], &c, 1) < 0) {
		/* a full pipe already holds a wake-up */
	}
}

void kv_prefix_index_free(kv_prefix_index *ix)
{
	if (!ix)
		return;
	if (ix->watching) {
		atomic_store(&ix->stop, 1);
		ix_wake(ix);
		pthread_join(ix->thread, NULL);
	}
	if (ix->wake[0] >= 0) {
		close(ix->wake[0]);
		close(ix->wake[1]);
	}
	for (int i = 0; i < ix->n; i++)
		free(ix->e[i].hist);
	free(ix->e);
	free(ix->slot);
	pthread_mutex_destroy(&ix->mu);
	free(ix);
}

/* ---- the name table (under mu) ---- */

static uint32_t ix_hash(const char *name)
{
	uint32_t h = 2166136261u; /* FNV-1a */
	for (; *name; name++)
		h = (h ^ (unsigned char)*name) * 16777619u;
	return h;
}

/* The slot of NAME, or of the empty slot where it would go. */
static uint32_t ix_probe(const kv_prefix_index *ix, const char *name)
{
	uint32_t h = ix_hash(name) & ix->mask;
	while (ix->slot[h] && strcmp(ix->e[ix->slot[h] - 1].name, name))
		h = (h + 1) & ix->mask;
	return h;
}

/* Size the table for cap entries (at most half full) and fill it; a table
 * already big enough is refilled in place, so removing never allocates. */
static int ix_rehash(kv_prefix_index *ix)
{
	uint32_t size = 64;
	while (size < 2u * (uint32_t)ix->cap)
		size *= 2;
	if (ix->slot && ix->mask + 1 >= size) {
		memset(ix->slot, 0, sizeof *ix->slot * (ix->mask + 1));
	} else {
		int *t = calloc(size, sizeof *t);
		if (!t)
			return -ENOMEM;
		free(ix->slot);
		ix->slot = t;
		ix->mask = size - 1;
	}
	for (int i = 0; i < ix->n; i++)
		ix->slot[ix_probe(ix, ix->e[i].name)] = i + 1;
	return 0;
}

static ix_entry *ix_find(kv_prefix_index *ix, const char *name)
{
	if (!ix->slot)
		return NULL;
	uint32_t h = ix_probe(ix, name);
	return ix->slot[h] ? &ix->e[ix->slot[h] - 1] : NULL;
}

/* NAME's entry, created empty (ver 0) when absent; NULL: out of memory. */
static ix_entry *ix_get(kv_prefix_index *ix, const char *name)
{
	if (!ix->slot && ix_rehash(ix) < 0)
		return NULL;
	uint32_t h = ix_probe(ix, name);
	if (ix->slot[h])
		return &ix->e[ix->slot[h] - 1];
	if (util_array_grow(&ix->e, &ix->cap, ix->n + 1, 16))
		return NULL;
	ix_entry *e = &ix->e[ix->n++];
	memset(e, 0, sizeof *e);
	snprintf(e->name, sizeof e->name, "%s", name);
	if (2u * (uint32_t)ix->cap > ix->mask + 1) {
		if (ix_rehash(ix) < 0) {
			ix->n--;
			return NULL;
		}
	} else {
		ix->slot[h] = ix->n;
	}
	return e;
}

/* Remove the entries for which keep() is false; rebuilds the table. */
static void ix_remove_if(kv_prefix_index *ix, int (*keep)(const ix_entry *, const void *),
			 const void *arg)
{
	int removed = 0;
	for (int i = 0; i < ix->n;) {
		if (keep(&ix->e[i], arg)) {
			i++;
			continue;
		}
		free(ix->e[i].hist);
		ix->e[i] = ix->e[--ix->n];
		removed = 1;
	}
	if (removed)
		ix_rehash(ix); /* in place: cannot fail */
}

static int keep_other_name(const ix_entry *e, const void *name) { return strcmp(e->name, name) != 0; }

static int keep_seen(const ix_entry *e, const void *pass) { return e->seen >= *(const uint64_t *)pass; }

/* ---- reading a file (no lock: e is the caller's copy) ---- */

/* Read the records appended since e->end (token ids only). A file that was
 * replaced (compaction, rename over) or cut is re-read. */
static int ix_update(ix_entry *e, const char *path, const struct stat *st)
{
	if (e->ino != st->st_ino || e->dev != st->st_dev || (uint64_t)st->st_size < e->end) {
		e->ino = st->st_ino;
		e->dev = st->st_dev;
		e->end = 0;
		e->len = 0;
		e->bad = 0;
	}
	if (e->bad || (uint64_t)st->st_size == e->end)
		return 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc = 0;
	struct stat now;
	if (fd < 0)
		return -errno;
	if (fstat(fd, &now) < 0 || now.st_ino != e->ino) {
		close(fd); /* replaced meanwhile: its own event reads it */
		return 0;
	}
	if (e->end == 0) {
		kv_header h;
		if (kv_fmt_header_read(fd, path, (uint64_t)now.st_size, &h, NULL) < 0) {
			e->bad = 1;
			close(fd);
			return 0;
		}
		memcpy(e->fingerprint, h.fingerprint, sizeof e->fingerprint);
		e->n_layers = h.n_layers;
		e->width = h.width;
		e->index_layers = h.index_layers;
		e->index_width = h.index_width;
		e->end = KV_HDR_SIZE;
	}
	kv_walk w = { .fd = fd, .size = (uint64_t)now.st_size, .n_layers = e->n_layers, .width = e->width,
		      .index_layers = e->index_layers, .index_width = e->index_width };
	unsigned char head[KV_REC_HEAD];
	while (w.size - e->end >= KV_REC_FRAME &&
	       (rc = kv_fmt_pread_full(fd, head, sizeof head, e->end)) == 0 &&
	       kv_fmt_frame_plausible(&w, e->end, head)) {
		uint32_t type = kv_get_u32(head), n = kv_get_u32(head + 8), first = kv_get_u32(head + 12);
		if (type == KV_TYPE_TRUNC) {
			if (first > e->len)
				break;
			e->len = first;
		} else {
			if (first != e->len || (uint64_t)e->len + n > INT_MAX)
				break;
			/* e->len + n is at most INT_MAX (above), so the
			 * capacity stays a uint32_t */
			size_t nc = e->cap;
			if (util_array_grow(&e->hist, &nc, (size_t)e->len + n, 256)) {
				rc = -ENOMEM;
				break;
			}
			e->cap = (uint32_t)nc;
			if ((rc = kv_fmt_pread_full(fd, e->hist + e->len, 4u * (size_t)n, e->end + KV_REC_HEAD)) < 0)
				break;
			e->len += n;
		}
		e->end += KV_REC_FRAME + kv_get_u32(head + 4);
	}
	close(fd);
	return rc;
}

/* Bring NAME's entry up to date with its file (removed when the file is
 * gone), stamping it with `pass`. */
static int ix_refresh_one(kv_prefix_index *ix, const char *name, uint64_t pass)
{
	char path[PATH_MAX];
	struct stat st;
	if (!kv_store_name_valid(name) || kv_store_name_private(name) ||
	    kv_store_path(ix->dir, name, "kv", path, sizeof path, NULL) < 0)
		return 0;
	if (stat(path, &st) < 0 || !S_ISREG(st.st_mode)) {
		pthread_mutex_lock(&ix->mu);
		ix_remove_if(ix, keep_other_name, name);
		pthread_mutex_unlock(&ix->mu);
		coli_debug("prefix index: %s: gone", name);
		return 0;
	}
	ix_entry w;
	uint64_t ver = 0;
	memset(&w, 0, sizeof w);
	pthread_mutex_lock(&ix->mu);
	ix_entry *e = ix_find(ix, name);
	if (e && e->ino == st.st_ino && e->dev == st.st_dev && (e->bad || e->end == (uint64_t)st.st_size)) {
		e->seen = pass; /* unchanged */
		pthread_mutex_unlock(&ix->mu);
		return 0;
	}
	if (e) {
		w = *e;
		w.hist = NULL;
		w.cap = 0;
		ver = e->ver;
		if (w.len && !(w.hist = malloc(sizeof *w.hist * w.len))) {
			pthread_mutex_unlock(&ix->mu);
			return -ENOMEM;
		}
		if (w.len)
			memcpy(w.hist, e->hist, sizeof *w.hist * w.len);
		w.cap = w.len;
	}
	pthread_mutex_unlock(&ix->mu);
	snprintf(w.name, sizeof w.name, "%s", name);
	int rc = ix_update(&w, path, &st);
	if (rc < 0)
		coli_debug("prefix index: %s: %s", path, strerror(-rc));
	long applied = -1;
	pthread_mutex_lock(&ix->mu);
	e = ix_get(ix, name);
	if (e && e->ver == ver) {
		free(e->hist);
		w.ver = ++ix->clock;
		w.seen = pass;
		*e = w;
		w.hist = NULL;
		applied = (long)e->len;
	} else if (!e) {
		rc = -ENOMEM;
	} else if (e->ver == 0) {
		/* dropped meanwhile (and just re-created empty by ix_get):
		 * the pass the drop asked for decides */
		ix_remove_if(ix, keep_other_name, name);
	}
	/* else the engine noted a newer state meanwhile: keep it */
	pthread_mutex_unlock(&ix->mu);
	free(w.hist);
	if (applied >= 0) /* tests wait for this line */
		coli_debug("prefix index: %s: %ld tokens", name, applied);
	return rc == -ENOMEM ? rc : 0;
}

/* Read the whole directory: every .kv file checked, entries of files that
 * are gone removed. */
static int ix_pass(kv_prefix_index *ix, coli_err *err)
{
	pthread_mutex_lock(&ix->mu);
	uint64_t pass = ++ix->pass;
	pthread_mutex_unlock(&ix->mu);
	int rc = 0;
	DIR *d = opendir(ix->dir);
	if (!d && errno != ENOENT)
		return coli_err_set(err, -errno, "%s: %s", ix->dir, strerror(errno));
	struct dirent *de;
	while (d && (de = readdir(d))) {
		size_t len = strlen(de->d_name);
		char name[KV_NAME_MAX + 1];
		if (len <= 3 || len - 3 > KV_NAME_MAX || strcmp(de->d_name + len - 3, ".kv"))
			continue;
		memcpy(name, de->d_name, len - 3);
		name[len - 3] = '\0';
		if ((rc = ix_refresh_one(ix, name, pass)) < 0)
			break;
	}
	if (d)
		closedir(d);
	if (rc < 0)
		return coli_err_set(err, rc, "%s: out of memory", ix->dir);
	pthread_mutex_lock(&ix->mu);
	ix_remove_if(ix, keep_seen, &pass);
	pthread_mutex_unlock(&ix->mu);
	atomic_fetch_add(&ix->passes, 1);
	return 0;
}

/* ---- lookups and the engine's own changes ---- */

void kv_prefix_index_lookup(kv_prefix_index *ix, const char *fingerprint, const int32_t *tokens,
			    int n, char *name_out, size_t cap, int *n_match)
{
	int best = 0;
	if (cap)
		name_out[0] = '\0';
	pthread_mutex_lock(&ix->mu);
	for (int i = 0; i < ix->n; i++) {
		const ix_entry *e = &ix->e[i];
		if (e->bad || (int)e->len < best)
			continue;
		int lim = (int)e->len < n ? (int)e->len : n, m = 0;
		while (m < lim && e->hist[m] == tokens[m])
			m++;
		/* ties go to the first name in byte order, so results are
		 * stable; the fingerprint only for a candidate */
		if ((m > best || (m == best && m > 0 && strcmp(e->name, name_out) < 0)) &&
		    !(fingerprint && strcmp(fingerprint, e->fingerprint))) {
			best = m;
			snprintf(name_out, cap, "%s", e->name);
		}
	}
	pthread_mutex_unlock(&ix->mu);
	*n_match = best;
}

int kv_prefix_index_find(kv_prefix_index *ix, const char *fingerprint, const int32_t *tokens,
			 int n, char *name_out, size_t cap, int *n_match, coli_err *err)
{
	if (cap)
		name_out[0] = '\0';
	*n_match = 0;
	int rc = ix_pass(ix, err);
	if (rc < 0)
		return rc;
	kv_prefix_index_lookup(ix, fingerprint, tokens, n, name_out, cap, n_match);
	return 0;
}

int kv_prefix_index_note(kv_prefix_index *ix, const kv_session *s, const char *fingerprint,
			 const int32_t *tokens, int n)
{
	struct stat st;
	if (!kv_session_persisted(s) || kv_store_name_private(kv_session_name(s)) ||
	    kv_session_fstat(s, &st) < 0 || n < 0)
		return 0; /* the refresher reads what the file holds */
	int rc = 0;
	pthread_mutex_lock(&ix->mu);
	ix_entry *e = ix_get(ix, kv_session_name(s));
	if (!e) {
		rc = -ENOMEM;
		goto out;
	}
	if ((uint32_t)n > e->cap) {
		int32_t *p = realloc(e->hist, sizeof *p * (size_t)n);
		if (!p) {
			/* an entry that does not match its file would mislead
			 * lookups until the next change: drop it instead */
			ix_remove_if(ix, keep_other_name, kv_session_name(s));
			rc = -ENOMEM;
			goto out;
		}
		e->hist = p;
		e->cap = (uint32_t)n;
	}
	if (n)
		memcpy(e->hist, tokens, sizeof *tokens * (size_t)n);
	e->len = (uint32_t)n;
	e->dev = st.st_dev;
	e->ino = st.st_ino;
	e->end = kv_session_bytes(s);
	snprintf(e->fingerprint, sizeof e->fingerprint, "%s", fingerprint);
	e->n_layers = (uint32_t)kv_session_n_layers(s);
	e->width = (uint32_t)kv_session_width(s);
	e->index_layers = (uint32_t)kv_session_index_layers(s);
	e->index_width = (uint32_t)kv_session_index_width(s);
	e->bad = 0;
	e->ver = ++ix->clock;
	e->seen = ix->pass; /* a pass in progress keeps it */
out:
	pthread_mutex_unlock(&ix->mu);
	return rc;
}

void kv_prefix_index_drop(kv_prefix_index *ix, const char *name)
{
	pthread_mutex_lock(&ix->mu);
	ix_remove_if(ix, keep_other_name, name);
	pthread_mutex_unlock(&ix->mu);
	atomic_store(&ix->rescan, 1);
	ix_wake(ix);
}

uint64_t kv_prefix_index_passes(kv_prefix_index *ix) { return atomic_load(&ix->passes); }

/* ---- the refresher thread ---- */

#define IX_EVENTS (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_MODIFY | IN_CLOSE_WRITE | \
		   IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR)

/* The session an event's file name is about: NAME.kv, or .NAME.kv.tmp.PID
 * (kv_session.c creates a session under that name and links it into
 * place; inotify reports the writes made through that open file under the
 * name it was opened by, even after the temporary name is gone). */
static int ix_event_name(const char *file, char name[KV_NAME_MAX + 1])
{
	size_t len = strlen(file);
	const char *tmp = file[0] == '.' ? strstr(file, ".kv.tmp.") : NULL;
	if (tmp) {
		file++;
		len = (size_t)(tmp - file);
	} else if (len > 3 && !strcmp(file + len - 3, ".kv")) {
		len -= 3;
	} else {
		return 0;
	}
	if (len == 0 || len > KV_NAME_MAX)
		return 0;
	memcpy(name, file, len);
	name[len] = '\0';
	return 1;
}

/* One batch of inotify events: the named .kv files are refreshed one by
 * one; 1 when a whole pass is needed instead (queue overflow, the
 * directory itself moved or removed: *wd becomes -1). */
static int ix_events(kv_prefix_index *ix, int in, int *wd)
{
	_Alignas(struct inotify_event) char buf[4096];
	ssize_t got = read(in, buf, sizeof buf);
	int full = 0;
	for (ssize_t off = 0; got > 0 && off < got;) {
		const struct inotify_event *ev = (const struct inotify_event *)(buf + off);
		off += (ssize_t)(sizeof *ev + ev->len);
		if (ev->mask & IN_Q_OVERFLOW) {
			full = 1;
		} else if (ev->wd != *wd) {
			continue; /* a watch already given up */
		} else if (ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED)) {
			if (!(ev->mask & IN_IGNORED))
				inotify_rm_watch(in, *wd);
			*wd = -1;
			full = 1;
		} else if (!full && ev->len) {
			char name[KV_NAME_MAX + 1];
			if (!ix_event_name(ev->name, name))
				continue;
			pthread_mutex_lock(&ix->mu);
			uint64_t pass = ix->pass;
			pthread_mutex_unlock(&ix->mu);
			if (ix_refresh_one(ix, name, pass) < 0)
				full = 1;
		}
	}
	return full;
}

static void *ix_watch_main(void *arg)
{
	kv_prefix_index *ix = arg;
	int in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC), wd = -1;
	if (in < 0)
		coli_warn("prefix index: inotify: %s; reading %s every %d ms instead", strerror(errno), ix->dir,
			  IX_POLL_MS);
	while (!atomic_load(&ix->stop)) {
		int full = 0;
		if (in >= 0 && wd < 0 && (wd = inotify_add_watch(in, ix->dir, IX_EVENTS)) >= 0)
			full = 1; /* (re)created since the last look: catch up */
		if (!full) {
			struct pollfd p[2] = { { .fd = ix->wake[0], .events = POLLIN },
					       { .fd = in, .events = POLLIN } };
			int r = poll(p, in >= 0 ? 2 : 1, wd >= 0 ? -1 : IX_POLL_MS);
			if (r == 0)
				full = 1;
			if (r > 0 && (p[0].revents & POLLIN)) {
				char drain[64];
				while (read(ix->wake[0], drain, sizeof drain) > 0)
					;
			}
			if (r > 0 && in >= 0 && (p[1].revents & POLLIN))
				full |= ix_events(ix, in, &wd);
		}
		if (atomic_exchange(&ix->rescan, 0))
			full = 1;
		coli_err err = { 0 };
		if (full && !atomic_load(&ix->stop) && ix_pass(ix, &err) < 0)
			coli_debug("prefix index: %s", err.msg);
	}
	if (in >= 0)
		close(in);
	return NULL;
}

int kv_prefix_index_watch(kv_prefix_index *ix, coli_err *err)
{
	int rc;
	if (ix->watching)
		return 0;
	if ((rc = ix_pass(ix, err)) < 0)
		return rc;
	if (pipe2(ix->wake, O_CLOEXEC | O_NONBLOCK) < 0) {
		ix->wake[0] = ix->wake[1] = -1;
		return coli_err_set(err, -errno, "prefix index: pipe: %s", strerror(errno));
	}
	if (pthread_create(&ix->thread, NULL, ix_watch_main, ix))
		return coli_err_set(err, -EAGAIN, "prefix index: cannot start its refresher thread");
	ix->watching = 1;
	return 0;
}

int kv_store_find_prefix(const char *dir, const char *fingerprint, const int32_t *tokens,
			 int n, char *name_out, size_t cap, int *n_match, coli_err *err)
{
	kv_prefix_index *ix;
	int rc = kv_prefix_index_new(dir, &ix, err);
	if (cap)
		name_out[0] = '\0';
	*n_match = 0;
	if (rc < 0)
		return rc;
	rc = kv_prefix_index_find(ix, fingerprint, tokens, n, name_out, cap, n_match, err);
	kv_prefix_index_free(ix);
	return rc;
}
