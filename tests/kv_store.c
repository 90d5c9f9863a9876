/* kv_store.c - session names, list, rm, rename, gc (LRU under a budget,
 * sessions in use kept), prefix matching, size parsing, the cache dir rule. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kv_cache_dir.h"
#include "model_manifest.h"
#include "util_sha256.h"
#include "kv_store.h"
#include "kv_test.h"
#include "test_util.h"

#define L 2
#define W 4

static char *dir;

static void make(const char *name, const char *fp, uint32_t seed, int n, time_t mtime)
{
	kv_session *s;
	coli_err err = { 0 };
	if (kv_session_create(dir, name, fp, L, W, 0, &s, &err) < 0) {
		fprintf(stderr, "%s\n", err.msg);
		exit(99);
	}
	for (int pos = 0; pos < n; pos += 5)
		CHECK_RC(kvt_append(s, seed, pos, n - pos < 5 ? n - pos : 5, &err), 0);
	kv_session_close(s);
	char path[4300];
	snprintf(path, sizeof path, "%s/%s.kv", dir, name);
	struct timespec ts[2] = { { mtime, 0 }, { mtime, 0 } };
	CHECK(utimensat(AT_FDCWD, path, ts, 0) == 0);
}

static void test_names(void)
{
	const char *good[] = { "a", "chat-1", "A.b_c-9", "x..", "0123456789012345678901234567890123456789012345678901234567890123" };
	const char *bad[] = { "", ".hidden", "a/b", "..", "a..b", "sp ace", "é", "a\\b",
			      "01234567890123456789012345678901234567890123456789012345678901234" };
	for (size_t i = 0; i < sizeof good / sizeof *good; i++)
		CHECK(kv_store_name_valid(good[i]) == (strstr(good[i], "..") == NULL));
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
		CHECK(!kv_store_name_valid(bad[i]));
	coli_err err = { 0 };
	CHECK_RC(kv_store_name_check("a/b", &err), -EINVAL);
	CHECK(strstr(err.msg, "a/b") != NULL);
	char p[16];
	CHECK_RC(kv_store_path("/very/long/dir", "name", "kv", p, sizeof p, &err), -ENAMETOOLONG);
}

static void test_list_rm_rename(void)
{
	coli_err err = { 0 };
	kv_store_entry *v;
	int n;
	CHECK_RC(kv_store_list("/nonexistent/kv", &v, &n, &err), 0);
	CHECK(n == 0);
	make("b", FP_A, 1, 12, 1000);
	make("a", FP_B, 2, 3, 2000);
	/* junk that list must skip */
	char junk[4300];
	snprintf(junk, sizeof junk, "%s/.a.kv.tmp.1", dir);
	close(open(junk, O_CREAT | O_WRONLY, 0600));
	snprintf(junk, sizeof junk, "%s/notes.txt", dir);
	close(open(junk, O_CREAT | O_WRONLY, 0600));
	CHECK_RC(kv_store_list(dir, &v, &n, &err), 0);
	CHECK(n == 2);
	if (n == 2) {
		CHECK(!strcmp(v[0].name, "a") && v[0].n_tokens == 3 && !strcmp(v[0].fingerprint, FP_B));
		CHECK(!strcmp(v[1].name, "b") && v[1].n_tokens == 12 && v[1].mtime == 1000);
		CHECK(v[1].bytes == 128 + 3 * 20 + 12 * 4 * (1 + L * W));
		CHECK(v[0].status == KV_FILE_OK && !v[0].locked && v[1].n_layers == L && v[1].width == W);
	}
	free(v);
	/* in use: listed as locked; rm and rename refuse */
	kv_session *s;
	CHECK_RC(kv_session_open(dir, "b", NULL, 0, 0, 0, &s, NULL, &err), 0);
	CHECK_RC(kv_store_list(dir, &v, &n, &err), 0);
	CHECK(n == 2 && v[1].locked);
	free(v);
	CHECK_RC(kv_store_rm(dir, "b", &err), -EBUSY);
	CHECK_RC(kv_store_rename(dir, "b", "c", &err), -EBUSY);
	kv_session_close(s);
	/* rename never overwrites */
	CHECK_RC(kv_store_rename(dir, "b", "a", &err), -EEXIST);
	CHECK_RC(kv_store_rename(dir, "b", "b", &err), -EINVAL);
	CHECK_RC(kv_store_rename(dir, "zz", "c", &err), -ENOENT);
	CHECK_RC(kv_store_rename(dir, "b", "../c", &err), -EINVAL);
	char chat[4300];
	snprintf(chat, sizeof chat, "%s/b.chat.json", dir);
	close(open(chat, O_CREAT | O_WRONLY, 0600));
	CHECK_RC(kv_store_rename(dir, "b", "c", &err), 0);
	CHECK(access(chat, F_OK) < 0);
	snprintf(chat, sizeof chat, "%s/c.chat.json", dir);
	CHECK(access(chat, F_OK) == 0);
	kv_loaded l;
	CHECK_RC(kv_session_open(dir, "c", FP_A, L, W, 0, &s, &l, &err), 0);
	CHECK(kvt_loaded_ok(&l, 1, 12));
	kv_loaded_free(&l);
	kv_session_close(s);
	CHECK_RC(kv_session_open(dir, "b", NULL, 0, 0, 0, &s, NULL, &err), -ENOENT);
	CHECK_RC(kv_store_rm(dir, "c", &err), 0);
	CHECK(access(chat, F_OK) < 0);
	CHECK_RC(kv_store_rm(dir, "c", &err), -ENOENT);
	CHECK_RC(kv_store_rm(dir, "a", &err), 0);
	char lock[4300];
	snprintf(lock, sizeof lock, "%s/a.lock", dir);
	CHECK(access(lock, F_OK) < 0);
	CHECK_RC(kv_store_list(dir, &v, &n, &err), 0);
	CHECK(n == 0);
	free(v);
}

static void test_gc(void)
{
	coli_err err = { 0 };
	kv_store_entry *v;
	int n, removed;
	uint64_t freed, left, each = 128 + 2 * (20 + 5 * 4 * (1 + L * W));
	make("old", FP_A, 1, 10, 1000);
	make("mid", FP_A, 1, 10, 2000);
	make("new", FP_A, 1, 10, 3000);
	make("busy", FP_A, 1, 10, 500);
	kv_session *s;
	CHECK_RC(kv_session_open(dir, "busy", NULL, 0, 0, 0, &s, NULL, &err), 0);
	CHECK_RC(kv_store_gc(dir, 4 * each, &removed, &freed, &left, &err), 0);
	CHECK(removed == 0 && freed == 0 && left == 4 * each);
	CHECK_RC(kv_store_gc(dir, 2 * each, &removed, &freed, &left, &err), 0);
	CHECK(removed == 2 && freed == 2 * each && left == 2 * each);
	CHECK_RC(kv_store_list(dir, &v, &n, &err), 0);
	CHECK(n == 2 && !strcmp(v[0].name, "busy") && !strcmp(v[1].name, "new"));
	free(v);
	CHECK_RC(kv_store_gc(dir, 0, &removed, &freed, &left, &err), 0);
	CHECK(removed == 1 && left == each); /* busy survives */
	kv_session_close(s);
	/* a temporary file left by a crash is collected; one whose session is
	 * locked (a create or compaction in progress) is not */
	char tmp1[4300], tmp2[4300];
	snprintf(tmp1, sizeof tmp1, "%s/.gone.kv.tmp.123", dir);
	snprintf(tmp2, sizeof tmp2, "%s/.held.kv.tmp.456", dir);
	FILE *f = fopen(tmp1, "w");
	fputs("partial", f);
	fclose(f);
	close(open(tmp2, O_CREAT | O_WRONLY, 0600));
	int lk;
	CHECK_RC(kv_store_lock(dir, "held", &lk, &err), 0);
	CHECK_RC(kv_store_gc(dir, 0, &removed, &freed, &left, &err), 0);
	CHECK(removed == 1 && left == 0 && freed == each + 7);
	CHECK(access(tmp1, F_OK) < 0 && access(tmp2, F_OK) == 0);
	kv_store_unlock(lk);
	CHECK_RC(kv_store_gc(dir, 0, &removed, &freed, &left, &err), 0);
	CHECK(access(tmp2, F_OK) < 0 && removed == 0);
	/* create makes the directory */
	char sub[4300];
	snprintf(sub, sizeof sub, "%s/new/kv", dir);
	CHECK_RC(kv_session_create(sub, "x", FP_A, L, W, 0, &s, &err), 0);
	kv_session_close(s);
}

static void test_prefix(void)
{
	coli_err err = { 0 };
	char name[80];
	int m;
	int32_t q[40];
	for (int i = 0; i < 40; i++)
		q[i] = kvt_token(7, (uint32_t)i);
	make("p10", FP_A, 7, 10, 1000);
	make("p25", FP_A, 7, 25, 1000);
	make("other", FP_A, 8, 30, 1000);
	make("model", FP_B, 7, 35, 1000);
	CHECK_RC(kv_store_find_prefix(dir, FP_A, q, 40, name, sizeof name, &m, &err), 0);
	CHECK(m == 25 && !strcmp(name, "p25"));
	CHECK_RC(kv_store_find_prefix(dir, FP_A, q, 12, name, sizeof name, &m, &err), 0);
	CHECK(m == 12);
	CHECK_RC(kv_store_find_prefix(dir, FP_B, q, 40, name, sizeof name, &m, &err), 0);
	CHECK(m == 35 && !strcmp(name, "model"));
	q[3] ^= 1;
	CHECK_RC(kv_store_find_prefix(dir, FP_A, q, 40, name, sizeof name, &m, &err), 0);
	CHECK(m == 3);
	q[3] ^= 1;
	/* a rewind and new history: matching follows the live history */
	kv_session *s;
	CHECK_RC(kv_session_open(dir, "p25", NULL, 0, 0, 0, &s, NULL, &err), 0);
	CHECK_RC(kv_session_truncate_tokens(s, 20, &err), 0);
	CHECK_RC(kvt_append(s, 9, 20, 5, &err), 0);
	kv_session_close(s);
	CHECK_RC(kv_store_find_prefix(dir, FP_A, q, 40, name, sizeof name, &m, &err), 0);
	CHECK(m == 20 && !strcmp(name, "p25"));
	char path[4300];
	snprintf(path, sizeof path, "%s/p25.kv", dir);
	CHECK_RC(kv_file_match_prefix(path, FP_B, q, 40, &m, &err), -ESTALE);
	for (int i = 20; i < 25; i++)
		q[i] = kvt_token(9, (uint32_t)i);
	CHECK_RC(kv_file_match_prefix(path, FP_A, q, 40, &m, &err), 0);
	CHECK(m == 25);
	CHECK_RC(kv_store_find_prefix("/nonexistent", FP_A, q, 40, name, sizeof name, &m, &err), 0);
	CHECK(m == 0 && name[0] == '\0');
}

/* The incremental index follows appends, rewinds, compaction, rename and
 * removal between lookups. */
static void test_prefix_index(void)
{
	coli_err err = { 0 };
	kv_prefix_index *ix;
	kv_session *s;
	char name[80];
	int m;
	int32_t q[60];
	for (int i = 0; i < 60; i++)
		q[i] = kvt_token(21, (uint32_t)i);
	CHECK_RC(kv_prefix_index_new(dir, &ix, &err), 0);
	make("ia", FP_A, 21, 10, 1000);
	make("ib", FP_A, 21, 10, 1000);
	CHECK_RC(kv_prefix_index_find(ix, FP_A, q, 60, name, sizeof name, &m, &err), 0);
	CHECK(m == 10 && !strcmp(name, "ia")); /* tie: smallest name */
	CHECK_RC(kv_session_open(dir, "ib", NULL, 0, 0, 0, &s, NULL, &err), 0);
	CHECK_RC(kvt_append(s, 21, 10, 20, &err), 0);
	CHECK_RC(kv_prefix_index_find(ix, FP_A, q, 60, name, sizeof name, &m, &err), 0);
	CHECK(m == 30 && !strcmp(name, "ib"));
	CHECK_RC(kv_session_truncate_tokens(s, 12, &err), 0);
	CHECK_RC(kvt_append(s, 99, 12, 5, &err), 0);
	CHECK_RC(kv_prefix_index_find(ix, FP_A, q, 60, name, sizeof name, &m, &err), 0);
	CHECK(m == 12 && !strcmp(name, "ib"));
	CHECK_RC(kv_session_truncate_tokens(s, 12, &err), 0);
	CHECK_RC(kvt_append(s, 21, 12, 30, &err), 0);
	CHECK_RC(kv_session_compact(s, &err), 0);
	CHECK_RC(kv_prefix_index_find(ix, FP_A, q, 60, name, sizeof name, &m, &err), 0);
	CHECK(m == 42 && !strcmp(name, "ib"));
	kv_session_close(s);
	CHECK_RC(kv_store_rename(dir, "ib", "ic", &err), 0);
	CHECK_RC(kv_prefix_index_find(ix, FP_A, q, 60, name, sizeof name, &m, &err), 0);
	CHECK(m == 42 && !strcmp(name, "ic"));
	CHECK_RC(kv_store_rm(dir, "ic", &err), 0);
	CHECK_RC(kv_prefix_index_find(ix, FP_A, q, 60, name, sizeof name, &m, &err), 0);
	CHECK(m == 10 && !strcmp(name, "ia"));
	CHECK_RC(kv_prefix_index_find(ix, FP_B, q, 60, name, sizeof name, &m, &err), 0);
	CHECK(m == 0 && name[0] == '\0');
	kv_prefix_index_free(ix);
	kv_prefix_index_free(NULL);
}

static void test_sizes_and_cache_dir(void)
{
	char out[4300], want[4300];
	coli_err err = { 0 };
	setenv("COLI_CACHE_DIR", "/x/cache", 1);
	CHECK(kv_cache_dir("/m/glm", out, sizeof out, &err) == 0 && !strcmp(out, "/x/cache"));
	unsetenv("COLI_CACHE_DIR");
	setenv("XDG_CACHE_HOME", "/xdg", 1);
	CHECK(kv_cache_dir("/nonexistent/glm-5.2-int4-g64/", out, sizeof out, &err) == 0 &&
	      !strcmp(out, "/xdg/colitop/glm-5.2-int4-g64"));
	CHECK(kv_cache_dir(NULL, out, sizeof out, &err) == 0 && !strcmp(out, "/xdg/colitop/default"));
	unsetenv("XDG_CACHE_HOME");
	setenv("HOME", dir, 1);
	snprintf(want, sizeof want, "%s/.cache/colitop/%s", dir, strrchr(dir, '/') + 1);
	CHECK(kv_cache_dir(dir, out, sizeof out, &err) == 0 && !strcmp(out, want));
	/* two models named alike in different parents: the fingerprint of
	 * their manifests tells them apart (name + first 12 hex digits) */
	char m1[4200], m2[4200], fp[65];
	snprintf(m1, sizeof m1, "%s/p1/glm", dir);
	snprintf(m2, sizeof m2, "%s/p2/glm", dir);
	CHECK(kv_mkdirs(m1, &err) == 0 && kv_mkdirs(m2, &err) == 0);
	const char *man1 = "{\"format_version\":1,\"x\":1}\n", *man2 = "{\"format_version\":1,\"x\":2}\n";
	snprintf(out, sizeof out, "%s/manifest.json", m1);
	CHECK(manifest_write_atomic(out, man1, strlen(man1), &err) == 0);
	snprintf(out, sizeof out, "%s/manifest.json", m2);
	CHECK(manifest_write_atomic(out, man2, strlen(man2), &err) == 0);
	setenv("XDG_CACHE_HOME", "/xdg", 1);
	coli_sha256_hex(man1, strlen(man1), fp);
	snprintf(want, sizeof want, "/xdg/colitop/glm-%.12s", fp);
	CHECK(kv_cache_dir(m1, out, sizeof out, &err) == 0 && !strcmp(out, want));
	coli_sha256_hex(man2, strlen(man2), fp);
	snprintf(want, sizeof want, "/xdg/colitop/glm-%.12s", fp);
	CHECK(kv_cache_dir(m2, out, sizeof out, &err) == 0 && !strcmp(out, want));
	unsetenv("XDG_CACHE_HOME");
	char small[8];
	CHECK(kv_cache_dir("/m/glm", small, sizeof small, &err) == -ENAMETOOLONG);
	snprintf(out, sizeof out, "%s/a/b/c/kv", dir);
	CHECK(kv_mkdirs(out, &err) == 0 && kv_mkdirs(out, &err) == 0);
	struct stat st;
	CHECK(stat(out, &st) == 0 && (st.st_mode & 0777) == 0700);
	snprintf(out, sizeof out, "%s/p10.kv/x", dir);
	CHECK(kv_mkdirs(out, &err) < 0);
}

int main(void)
{
	kvt_quiet();
	dir = kvt_tmpdir();
	test_names();
	test_list_rm_rename();
	test_gc();
	test_prefix();
	test_prefix_index();
	test_sizes_and_cache_dir();
	kvt_rmrf(dir);
	return test_summary(__FILE__);
}
