/* The kept prefix index (kv_prefix_index.h):
 *  - a note (the engine's own save) is found by the next lookup with no
 *    refresh at all, and a drop forgets an entry at once;
 *  - with the refresher running, what other processes do to the directory
 *    (create, append, rename in, remove) reaches lookups without anyone
 *    calling a refresh, and a dropped entry whose file is fine comes back.
 * The writers are forked children, so nothing in this process tells the
 * index. Waits poll the lookup with a generous bound (30 s): no timing is
 * asserted, a refresher that never sees the change fails. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kv_store.h"
#include "kv_test.h"

#define L 2
#define W 8
#define SEED 21

static char dir[1100];

/* Run fn(arg) in a child process; 1 when it exited 0. */
static int in_child(int (*fn)(const char *), const char *arg)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0)
		_exit(fn(arg) ? 1 : 0);
	int st;
	return pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* NAME holds positions [0, n) of SEED's content. */
static int write_session(const char *name, int n)
{
	kv_session *s;
	coli_err err = { 0 };
	if (kv_session_create(dir, name, FP_A, L, W, KV_CREATE_OVERWRITE, &s, &err) < 0)
		return -1;
	int rc = kvt_append(s, SEED, 0, n, &err);
	kv_session_close(s);
	return rc;
}

/* Created, then appended through the same open file a moment later: the
 * writes are reported under the temporary name the file was created by
 * (.NAME.kv.tmp.PID), so a refresher that read the file only on its
 * creation would miss them. */
static int child_create_20(const char *name)
{
	kv_session *s;
	coli_err err = { 0 };
	/* exclusive: linked into place, as the engine creates sessions */
	if (kv_session_create(dir, name, FP_A, L, W, 0, &s, &err) < 0)
		return -1;
	nanosleep(&(struct timespec){ 0, 200000000 }, NULL);
	int rc = kvt_append(s, SEED, 0, 20, &err);
	kv_session_close(s);
	return rc;
}

static int child_append_10(const char *name)
{
	kv_session *s;
	coli_err err = { 0 };
	if (kv_session_open(dir, name, FP_A, L, W, 0, &s, NULL, &err) < 0)
		return -1;
	int rc = kvt_append(s, SEED, kv_session_n_tokens(s), 10, &err);
	kv_session_close(s);
	return rc;
}

/* A file made elsewhere under a name that is no session, then renamed in. */
static int child_rename_in(const char *name)
{
	char from[1400], to[1400];
	if (write_session("staging", 25))
		return -1;
	snprintf(from, sizeof from, "%s/staging.kv", dir);
	snprintf(to, sizeof to, "%s/%s.kv", dir, name);
	char tmp[1400];
	snprintf(tmp, sizeof tmp, "%s/staging.part", dir);
	/* the index must not see it half way: .part is no session */
	if (rename(from, tmp) || rename(tmp, to))
		return -1;
	snprintf(from, sizeof from, "%s/staging.lock", dir);
	unlink(from);
	return 0;
}

static int child_rm(const char *name)
{
	coli_err err = { 0 };
	return kv_store_rm(dir, name, &err);
}

/* Poll the lookup until it reports (name, want) — name "" with want 0 —
 * for at most 30 s. */
static int wait_for(kv_prefix_index *ix, const int32_t *q, int n, const char *name, int want)
{
	char got[80];
	int m = -1;
	for (int i = 0; i < 15000; i++) {
		kv_prefix_index_lookup(ix, FP_A, q, n, got, sizeof got, &m);
		if (m == want && !strcmp(got, name))
			return 1;
		nanosleep(&(struct timespec){ 0, 2000000 }, NULL);
	}
	fprintf(stderr, "waited 30 s for %s=%d; the lookup says %s=%d\n", name, want, got, m);
	return 0;
}

/* The engine's path: no refresher, no refresh; note and drop only. */
static void test_note_without_refresh(int32_t *q)
{
	coli_err err = { 0 };
	kv_prefix_index *ix;
	kv_session *s;
	char got[80];
	int m;
	CHECK_RC(kv_prefix_index_new(dir, &ix, &err), 0);
	REQUIRE(kv_session_create(dir, "own", FP_A, L, W, 0, &s, &err) == 0, "%s", err.msg);
	CHECK_RC(kvt_append(s, SEED, 0, 12, &err), 0);
	CHECK_RC(kv_session_sync(s, &err), 0);
	kv_prefix_index_lookup(ix, FP_A, q, 40, got, sizeof got, &m);
	CHECK(m == 0, "nothing noted yet, nothing refreshed: %s=%d", got, m);
	CHECK_RC(kv_prefix_index_note(ix, s, FP_A, q, kv_session_n_tokens(s)), 0);
	kv_prefix_index_lookup(ix, FP_A, q, 40, got, sizeof got, &m);
	CHECK(m == 12 && !strcmp(got, "own"), "the noted save: %s=%d", got, m);
	kv_prefix_index_lookup(ix, FP_B, q, 40, got, sizeof got, &m);
	CHECK(m == 0 && !got[0], "another model's lookup: %s=%d", got, m);
	/* a later save of the same session replaces the history */
	CHECK_RC(kvt_append(s, SEED, 12, 6, &err), 0);
	CHECK_RC(kv_prefix_index_note(ix, s, FP_A, q, kv_session_n_tokens(s)), 0);
	kv_prefix_index_lookup(ix, FP_A, q, 40, got, sizeof got, &m);
	CHECK(m == 18 && !strcmp(got, "own"), "the second save: %s=%d", got, m);
	kv_prefix_index_drop(ix, "own");
	kv_prefix_index_lookup(ix, FP_A, q, 40, got, sizeof got, &m);
	CHECK(m == 0, "dropped: %s=%d", got, m);
	CHECK(kv_prefix_index_passes(ix) == 0, "a directory pass ran");
	kv_session_close(s);
	kv_prefix_index_free(ix);
	coli_err_clear(&err);
	CHECK_RC(kv_store_rm(dir, "own", &err), 0);
}

static void test_refresher(int32_t *q)
{
	coli_err err = { 0 };
	kv_prefix_index *ix;
	CHECK_RC(kv_prefix_index_new(dir, &ix, &err), 0);
	CHECK_RC(kv_prefix_index_watch(ix, &err), 0);
	CHECK(kv_prefix_index_passes(ix) >= 1, "watch reads the directory first");
	CHECK(wait_for(ix, q, 40, "", 0));
	REQUIRE(in_child(child_create_20, "other"));
	CHECK(wait_for(ix, q, 40, "other", 20), "a session created by another process");
	REQUIRE(in_child(child_append_10, "other"));
	CHECK(wait_for(ix, q, 40, "other", 30), "an append by another process");
	REQUIRE(in_child(child_rm, "other"));
	CHECK(wait_for(ix, q, 40, "", 0), "removed by another process");
	REQUIRE(in_child(child_rename_in, "moved"));
	CHECK(wait_for(ix, q, 40, "moved", 25), "a file renamed in");
	/* a drop (verification failed) of a file that is fine: the pass it
	 * asks for brings the entry back */
	kv_prefix_index_drop(ix, "moved");
	CHECK(wait_for(ix, q, 40, "moved", 25), "a dropped entry re-read");
	REQUIRE(in_child(child_rm, "moved"));
	CHECK(wait_for(ix, q, 40, "", 0), "removed again");
	kv_prefix_index_free(ix);
}

/* The directory does not exist when the refresher starts: it is picked up
 * when it appears (periodic look, then inotify). */
static void test_directory_appears(int32_t *q)
{
	coli_err err = { 0 };
	kv_prefix_index *ix;
	char sub[1100];
	snprintf(sub, sizeof sub, "%.1000s/later", dir);
	CHECK_RC(kv_prefix_index_new(sub, &ix, &err), 0);
	CHECK_RC(kv_prefix_index_watch(ix, &err), 0);
	char saved[1100];
	snprintf(saved, sizeof saved, "%.1090s", dir);
	snprintf(dir, sizeof dir, "%.1090s", sub);
	REQUIRE(in_child(child_create_20, "late"));
	CHECK(wait_for(ix, q, 40, "late", 20), "a session in a directory made after the start");
	REQUIRE(in_child(child_append_10, "late"));
	CHECK(wait_for(ix, q, 40, "late", 30), "then followed");
	snprintf(dir, sizeof dir, "%.1090s", saved);
	kv_prefix_index_free(ix);
}

int main(void)
{
	kvt_quiet();
	snprintf(dir, sizeof dir, "%.1000s", kvt_tmpdir());
	int32_t q[40];
	for (int i = 0; i < 40; i++)
		q[i] = kvt_token(SEED, (uint32_t)i);
	test_note_without_refresh(q);
	test_refresher(q);
	test_directory_appears(q);
	kvt_rmrf(dir);
	return test_summary("kv_prefix_watch");
}
