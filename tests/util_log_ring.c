/* util_log_ring.c - the log ring (src/util_log_ring.h) keeps its promises:
 *
 *  - writer blocked: the file is a FIFO whose reader reads nothing until
 *    the logging threads are done. Many threads log through coli_log into
 *    it; they all return (a join that hangs is the failure), lines are
 *    dropped and counted, and once the reader drains the FIFO every line
 *    kept arrives whole and in order per thread, and the "N log lines
 *    dropped" lines add up to exactly what is missing;
 *  - clean shutdown: util_log_ring_free writes every line appended;
 *  - reopen: after a rename and util_log_ring_reopen, the new file gets
 *    the writer's "reopened" line and what follows, the old one keeps
 *    what came before;
 *  - a stream ring (coli serve's stderr) writes the default sink's lines
 *    and leaves its stream open.
 * The checks use sync points (joins, util_log_ring_sync, EOF), never time.
 * Run under ThreadSanitizer too (tools/test.sh). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "coli_log.h"
#include "test_util.h"
#include "util_log_ring.h"

#define THREADS 8
#define LINES 2000

static const char *const names[4] = { "debug", "info", "warn", "error" };

static void ring_sink(void *opaque, int level, const char *line)
{
	util_log_ring_append(opaque, level, line);
}

struct logger {
	int id, lines;
};

/* Lines "t<id> n<k> <padding>", with a debug line between that the level
 * check must stop before it reaches the sink. */
static void *logger_main(void *arg)
{
	const struct logger *lg = arg;
	for (int k = 0; k < lg->lines; k++) {
		coli_warn("t%d n%d %s", lg->id, k, "................................................................");
		coli_debug("t%d debug %d (never written)", lg->id, k);
	}
	return NULL;
}

static void log_from_threads(int lines)
{
	pthread_t th[THREADS];
	struct logger lg[THREADS];
	for (int t = 0; t < THREADS; t++) {
		lg[t] = (struct logger){ .id = t, .lines = lines };
		REQUIRE(pthread_create(&th[t], NULL, logger_main, &lg[t]) == 0);
	}
	for (int t = 0; t < THREADS; t++)
		pthread_join(th[t], NULL);
}

/* Check the text of a log file: whole lines, in order per thread, and the
 * dropped notices. Returns the lines kept; *notices gets the sum of N. */
static long check_lines(char *text, int lines, uint64_t *notices)
{
	int next[THREADS] = { 0 };
	long kept = 0;
	*notices = 0;
	for (char *save = NULL, *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		int t, k;
		unsigned long long n;
		/* "YYYY-MM-DDTHH:MM:SSZ NAME message" */
		const char *msg = strlen(l) > 21 ? strchr(l + 21, ' ') : NULL;
		CHECK(l[4] == '-' && l[10] == 'T' && l[19] == 'Z' && msg, "not a log line: '%s'", l);
		if (!msg)
			continue;
		msg++;
		if (sscanf(msg, "%llu log lines dropped", &n) == 1 && strstr(msg, " log lines dropped")) {
			CHECK(!strncmp(l + 21, "warn ", 5), "a notice not at warning: '%s'", l);
			*notices += n;
		} else if (sscanf(msg, "t%d n%d ", &t, &k) == 2 && t >= 0 && t < THREADS) {
			CHECK(k >= next[t] && k < lines, "thread %d: line %d after %d", t, k, next[t] - 1);
			CHECK(strlen(msg) > 64, "a cut line: '%s'", l);
			next[t] = k + 1;
			kept++;
		} else {
			FAIL("an unexpected line: '%s'", l);
		}
	}
	return kept;
}

static char *slurp_fd(int fd, size_t *len)
{
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap + 1);
	for (;;) {
		if (n == cap) {
			cap *= 2;
			buf = realloc(buf, cap + 1);
		}
		REQUIRE(buf != NULL);
		ssize_t got = read(fd, buf + n, cap - n);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		n += (size_t)got;
	}
	buf[n] = '\0';
	*len = n;
	return buf;
}

static char *slurp(const char *path)
{
	int fd = open(path, O_RDONLY);
	REQUIRE(fd >= 0, "open %s", path);
	size_t n;
	char *s = slurp_fd(fd, &n);
	close(fd);
	return s;
}

struct fifo_reader {
	int fd;
	char *text;
	size_t len;
};

static void *reader_main(void *arg)
{
	struct fifo_reader *rd = arg;
	rd->text = slurp_fd(rd->fd, &rd->len);
	return NULL;
}

/* The writer is blocked on a FIFO nobody reads: appends return anyway. */
static void test_blocked_writer(const char *dir)
{
	char path[512];
	snprintf(path, sizeof path, "%s/fifo", dir);
	REQUIRE(mkfifo(path, 0600) == 0);
	/* a reader that reads nothing yet: the writer's open succeeds and its
	 * writes block once the pipe is full */
	int rfd = open(path, O_RDONLY | O_NONBLOCK);
	REQUIRE(rfd >= 0);
	(void)fcntl(rfd, F_SETPIPE_SZ, 4096);   /* smaller is quicker; any size works */
	util_log_ring *r = NULL;
	coli_err err = { 0 };
	REQUIRE(util_log_ring_new(path, names, 16384, &r, &err) == 0, "%s", err.msg);
	coli_log_set_sink(ring_sink, r);
	/* 8 x 2000 lines of ~100 bytes: far more than the pipe, the ring and
	 * the writer's batch can hold while nobody reads */
	log_from_threads(LINES);
	const uint64_t dropped = util_log_ring_dropped(r);
	CHECK(dropped > 0, "nothing was dropped: was the writer blocked?");
	CHECK(dropped < (uint64_t)THREADS * LINES, "everything was dropped");
	coli_log_set_sink(NULL, NULL);
	/* now read: the writer drains what it kept and closes (EOF) */
	REQUIRE(fcntl(rfd, F_SETFL, fcntl(rfd, F_GETFL) & ~O_NONBLOCK) == 0);
	struct fifo_reader rd = { .fd = rfd };
	pthread_t th;
	REQUIRE(pthread_create(&th, NULL, reader_main, &rd) == 0);
	util_log_ring_free(r);
	pthread_join(th, NULL);
	close(rfd);
	uint64_t notices;
	long kept = check_lines(rd.text, LINES, &notices);
	CHECK(notices == dropped, "the notices say %llu lines dropped, the ring counted %llu",
	      (unsigned long long)notices, (unsigned long long)dropped);
	CHECK((uint64_t)kept + dropped == (uint64_t)THREADS * LINES, "%ld kept + %llu dropped != %d", kept,
	      (unsigned long long)dropped, THREADS * LINES);
	CHECK(!strstr(rd.text, "never written"), "a debug line passed the level check");
	printf("blocked writer: %ld lines kept, %llu dropped and said\n", kept, (unsigned long long)dropped);
	free(rd.text);
	unlink(path);
}

/* A clean stop loses nothing: free right after the last append. */
static void test_drain(const char *dir)
{
	char path[512];
	snprintf(path, sizeof path, "%s/drain.log", dir);
	util_log_ring *r = NULL;
	coli_err err = { 0 };
	/* the default ring holds all 8 x 500 lines: none may be dropped,
	 * however slow the writer */
	REQUIRE(util_log_ring_new(path, names, 0, &r, &err) == 0, "%s", err.msg);
	coli_log_set_sink(ring_sink, r);
	log_from_threads(500);
	coli_log_set_sink(NULL, NULL);
	CHECK(util_log_ring_dropped(r) == 0);
	util_log_ring_free(r);
	char *text = slurp(path);
	uint64_t notices;
	CHECK(check_lines(text, 500, &notices) == THREADS * 500, "lines lost at a clean stop");
	CHECK(notices == 0);
	free(text);
	unlink(path);
}

/* Rotation: rename, reopen; the writer says so in the new file. */
static void test_reopen(const char *dir)
{
	char path[512], old[520];
	snprintf(path, sizeof path, "%s/serve.log", dir);
	snprintf(old, sizeof old, "%s.1", path);
	util_log_ring *r = NULL;
	coli_err err = { 0 };
	REQUIRE(util_log_ring_new(path, names, 0, &r, &err) == 0, "%s", err.msg);
	CHECK(util_log_ring_append(r, COLI_LOG_INFO, "before\nthe rotation") == 0);
	util_log_ring_sync(r);
	REQUIRE(rename(path, old) == 0);
	util_log_ring_reopen(r);
	CHECK(util_log_ring_append(r, COLI_LOG_ERROR, "after the rotation") == 0);
	util_log_ring_free(r);
	char *a = slurp(old), *b = slurp(path);
	CHECK(strstr(a, " info before the rotation\n") != NULL, "old file: '%s'", a);
	CHECK(!strstr(a, "after"), "old file: '%s'", a);
	CHECK(strstr(b, " info log file ") && strstr(b, " reopened\n"), "new file: '%s'", b);
	CHECK(strstr(b, " error after the rotation\n") != NULL, "new file: '%s'", b);
	free(a);
	free(b);
	unlink(old);
	unlink(path);
	/* a path that cannot be opened is an error value, not a ring */
	snprintf(path, sizeof path, "%s/no-such-dir/x.log", dir);
	CHECK(util_log_ring_new(path, names, 0, &r, &err) == -ENOENT && !r);
}

/* A ring on a stream: "coli: warning: ..." lines, the stream left open. */
static void test_stream(const char *dir)
{
	char path[512];
	snprintf(path, sizeof path, "%s/stream.log", dir);
	FILE *f = fopen(path, "w");
	REQUIRE(f != NULL);
	util_log_ring *r = NULL;
	coli_err err = { 0 };
	static const char *const words[4] = { "debug", "info", "warning", "error" };
	REQUIRE(util_log_ring_new_stream(f, "coli: ", words, 0, &r, &err) == 0, "%s", err.msg);
	util_log_ring_append(r, COLI_LOG_WARN, "two\nparts");
	util_log_ring_reopen(r);   /* nothing to reopen: ignored */
	util_log_ring_append(r, COLI_LOG_ERROR, "last");
	util_log_ring_free(r);
	CHECK(fputs("after\n", f) >= 0 && fclose(f) == 0, "the ring closed its stream");
	char *text = slurp(path);
	CHECK_STR(text, "coli: warning: two parts\ncoli: error: last\nafter\n");
	free(text);
	unlink(path);
}

int main(int argc, char **argv)
{
	(void)argc;
	char dir[] = "/tmp/util_log_ring.XXXXXX";
	REQUIRE(mkdtemp(dir) != NULL);
	coli_log_set_level(COLI_LOG_INFO);
	test_blocked_writer(dir);
	test_drain(dir);
	test_reopen(dir);
	test_stream(dir);
	rmdir(dir);
	return test_summary(argv[0]);
}
