/* util_log_ring.c - see util_log_ring.h.
 *
 * The ring is a byte stream of whole lines, each ending in '\n': an append
 * copies all of its line or nothing, so any prefix the writer takes that
 * ends at a '\n' is whole lines. Counters are in bytes of that stream
 * (appended, written), so util_log_ring_sync can wait for a position. All
 * fields but f and batch are guarded by lock; f and batch are the writer
 * thread's (and new/free's, before it starts and after it is joined). */
#include "config.h"

#include "util_log_ring.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "coli_log.h"

#define LINE_MAX_BYTES 1200      /* one formatted line, '\n' included */
#define BATCH_MAX (64u << 10)    /* the most the writer takes out at once */

struct util_log_ring {
	pthread_mutex_t lock;
	pthread_cond_t wake;         /* the writer: lines, a reopen, stop */
	pthread_cond_t done;         /* sync: written (or reported) moved on */
	char *buf;
	size_t cap, head, len;       /* the next byte goes at head; the oldest is at head - len */
	uint64_t appended, written;  /* stream bytes put in / written out */
	uint64_t dropped;            /* lines dropped, in all */
	uint64_t pending;            /* dropped lines not yet said in the stream */
	uint64_t mark_end, mark_total; /* the latest in-ring notice: where it ends, the total it covers */
	uint64_t reported;           /* dropped lines whose notice has been written */
	int reopen, stop;
	const char *const *names;
	const char *prefix;          /* a stream ring's "PREFIXNAME: " lines; NULL: stamped */
	char *path;                  /* NULL for a stream ring */
	pthread_t thread;
	FILE *f;                     /* writer's: the file, or stderr after a failed reopen */
	char *batch;                 /* writer's: BATCH_MAX bytes */
	size_t batch_cap;
};

static void stamp_now(char out[24])
{
	time_t t = time(NULL);
	struct tm tm;
	strftime(out, 24, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tm));
}

static int clamp_level(int level)
{
	return level < COLI_LOG_DEBUG ? COLI_LOG_DEBUG : level > COLI_LOG_ERROR ? COLI_LOG_ERROR : level;
}

/* "STAMP NAME message\n" into out (LINE_MAX_BYTES), newlines flattened;
 * returns its length. */
static size_t format_line(const util_log_ring *r, const char *stamp, int level, const char *msg, char *out)
{
	int n = r->prefix ? snprintf(out, LINE_MAX_BYTES - 1, "%s%s: ", r->prefix, r->names[clamp_level(level)])
			  : snprintf(out, LINE_MAX_BYTES - 1, "%s %s ", stamp, r->names[clamp_level(level)]);
	size_t k = n > 0 ? (size_t)n : 0;
	for (const char *p = msg; *p && k < LINE_MAX_BYTES - 1; p++)
		out[k++] = *p == '\n' || *p == '\r' ? ' ' : *p;
	out[k++] = '\n';
	return k;
}

/* Under lock, with room checked. */
static void ring_put(util_log_ring *r, const char *s, size_t n)
{
	size_t first = r->cap - r->head < n ? r->cap - r->head : n;
	memcpy(r->buf + r->head, s, first);
	memcpy(r->buf, s + first, n - first);
	r->head = (r->head + n) % r->cap;
	r->len += n;
	r->appended += n;
}

int util_log_ring_append(util_log_ring *r, int level, const char *msg)
{
	char line[LINE_MAX_BYTES], mark[LINE_MAX_BYTES], stamp[24];
	stamp_now(stamp);
	size_t n = format_line(r, stamp, level, msg, line), m = 0;
	pthread_mutex_lock(&r->lock);
	if (r->pending) {
		char what[40];
		snprintf(what, sizeof what, "%llu log lines dropped", (unsigned long long)r->pending);
		m = format_line(r, stamp, COLI_LOG_WARN, what, mark);
	}
	if (r->len + m + n > r->cap) {
		r->pending++;
		r->dropped++;
		pthread_mutex_unlock(&r->lock);
		return 1;
	}
	if (m) {
		/* the notice goes where the gap is, before the first line kept */
		ring_put(r, mark, m);
		r->mark_end = r->appended;
		r->mark_total = r->dropped;
		r->pending = 0;
	}
	ring_put(r, line, n);
	pthread_cond_signal(&r->wake);
	pthread_mutex_unlock(&r->lock);
	return 0;
}

/* The writer's own line, straight to its file. */
static void writer_say(util_log_ring *r, int level, const char *msg)
{
	char line[LINE_MAX_BYTES], stamp[24];
	stamp_now(stamp);
	size_t n = format_line(r, stamp, level, msg, line);
	fwrite(line, 1, n, r->f);
	fflush(r->f);
}

static void writer_reopen(util_log_ring *r)
{
	char msg[LINE_MAX_BYTES];
	FILE *nf = fopen(r->path, "a");
	int e = errno;
	if (r->f && r->f != stderr)
		fclose(r->f);
	r->f = nf ? nf : stderr;
	if (nf)
		snprintf(msg, sizeof msg, "log file %s reopened", r->path);
	else
		snprintf(msg, sizeof msg, "log file %s: %s (writing to stderr)", r->path, strerror(e));
	writer_say(r, nf ? COLI_LOG_INFO : COLI_LOG_ERROR, msg);
}

/* Take up to batch_cap bytes of whole lines out of the ring (under lock). */
static size_t ring_take(util_log_ring *r)
{
	size_t take = r->len < r->batch_cap ? r->len : r->batch_cap;
	size_t tail = (r->head + r->cap - r->len) % r->cap;
	size_t first = r->cap - tail < take ? r->cap - tail : take;
	memcpy(r->batch, r->buf + tail, first);
	memcpy(r->batch + first, r->buf, take - first);
	if (take < r->len) {
		/* end at a line: a line is shorter than a batch, so one ends here */
		const char *nl = memrchr(r->batch, '\n', take);
		take = nl ? (size_t)(nl - r->batch) + 1 : take;
	}
	r->len -= take;
	return take;
}

static void *writer_main(void *arg)
{
	util_log_ring *r = arg;
	pthread_mutex_lock(&r->lock);
	for (;;) {
		while (!r->len && !r->reopen && !r->pending && !r->stop)
			pthread_cond_wait(&r->wake, &r->lock);
		if (r->reopen) {
			r->reopen = 0;
			if (r->path) {
				pthread_mutex_unlock(&r->lock);
				writer_reopen(r);
				pthread_mutex_lock(&r->lock);
			}
		} else if (r->len) {
			size_t n = ring_take(r);
			pthread_mutex_unlock(&r->lock);
			fwrite(r->batch, 1, n, r->f);
			fflush(r->f);
			pthread_mutex_lock(&r->lock);
			r->written += n;
			if (r->written >= r->mark_end && r->mark_total > r->reported)
				r->reported = r->mark_total;
			pthread_cond_broadcast(&r->done);
		} else if (r->pending) {
			/* caught up, and no line came after the gap to carry the
			 * notice: say it now */
			char msg[64];
			snprintf(msg, sizeof msg, "%llu log lines dropped", (unsigned long long)r->pending);
			const uint64_t total = r->dropped;
			r->pending = 0;
			pthread_mutex_unlock(&r->lock);
			writer_say(r, COLI_LOG_WARN, msg);
			pthread_mutex_lock(&r->lock);
			if (total > r->reported)
				r->reported = total;
			pthread_cond_broadcast(&r->done);
		} else {
			break; /* stop, with everything written */
		}
	}
	pthread_mutex_unlock(&r->lock);
	return NULL;
}

static void ring_release(util_log_ring *r)
{
	free(r->buf);
	free(r->batch);
	free(r->path);
	free(r);
}

/* The buffers, then (once r->f is set by the caller) the writer. */
static util_log_ring *ring_alloc(const char *const level_names[4], size_t cap)
{
	if (!cap)
		cap = UTIL_LOG_RING_BYTES;
	if (cap < 4096)
		cap = 4096;
	util_log_ring *r = calloc(1, sizeof *r);
	if (!r)
		return NULL;
	r->cap = cap;
	r->batch_cap = cap < BATCH_MAX ? cap : BATCH_MAX;
	r->names = level_names;
	r->buf = malloc(cap);
	r->batch = malloc(r->batch_cap);
	if (!r->buf || !r->batch) {
		ring_release(r);
		return NULL;
	}
	return r;
}

static int ring_start(util_log_ring *r, util_log_ring **out, coli_err *err)
{
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->wake, NULL);
	pthread_cond_init(&r->done, NULL);
	int rc = pthread_create(&r->thread, NULL, writer_main, r);
	if (rc) {
		if (r->f != stderr && r->path)
			fclose(r->f);
		pthread_mutex_destroy(&r->lock);
		pthread_cond_destroy(&r->wake);
		pthread_cond_destroy(&r->done);
		ring_release(r);
		return coli_err_set(err, -rc, "the log's writer thread: %s", strerror(rc));
	}
	*out = r;
	return 0;
}

int util_log_ring_new(const char *path, const char *const level_names[4], size_t cap, util_log_ring **out,
		      coli_err *err)
{
	*out = NULL;
	util_log_ring *r = ring_alloc(level_names, cap);
	if (!r || !(r->path = strdup(path))) {
		if (r)
			ring_release(r);
		return coli_err_set(err, -ENOMEM, "out of memory");
	}
	r->f = fopen(path, "a");
	if (!r->f) {
		int rc = coli_err_set(err, -errno, "log file %s: %s", path, strerror(errno));
		ring_release(r);
		return rc;
	}
	return ring_start(r, out, err);
}

int util_log_ring_new_stream(FILE *f, const char *prefix, const char *const level_names[4], size_t cap,
			     util_log_ring **out, coli_err *err)
{
	*out = NULL;
	util_log_ring *r = ring_alloc(level_names, cap);
	if (!r)
		return coli_err_set(err, -ENOMEM, "out of memory");
	r->f = f;
	r->prefix = prefix;
	return ring_start(r, out, err);
}

void util_log_ring_reopen(util_log_ring *r)
{
	pthread_mutex_lock(&r->lock);
	r->reopen = 1;
	pthread_cond_signal(&r->wake);
	pthread_mutex_unlock(&r->lock);
}

void util_log_ring_sync(util_log_ring *r)
{
	pthread_mutex_lock(&r->lock);
	const uint64_t bytes = r->appended, drops = r->dropped;
	while (r->written < bytes || r->reported < drops)
		pthread_cond_wait(&r->done, &r->lock);
	pthread_mutex_unlock(&r->lock);
}

uint64_t util_log_ring_dropped(util_log_ring *r)
{
	pthread_mutex_lock(&r->lock);
	uint64_t n = r->dropped;
	pthread_mutex_unlock(&r->lock);
	return n;
}

void util_log_ring_free(util_log_ring *r)
{
	if (!r)
		return;
	pthread_mutex_lock(&r->lock);
	r->stop = 1;
	pthread_cond_signal(&r->wake);
	pthread_mutex_unlock(&r->lock);
	pthread_join(r->thread, NULL);
	if (r->path && r->f != stderr)
		fclose(r->f);   /* a stream ring's stream is its owner's */
	pthread_mutex_destroy(&r->lock);
	pthread_cond_destroy(&r->wake);
	pthread_cond_destroy(&r->done);
	ring_release(r);
}
