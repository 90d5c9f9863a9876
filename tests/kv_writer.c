/* kv_writer.c - helper for the shell tests (not a test by itself).
 *
 *   kv_writer DIR NAME SEED loop         open (or create) NAME and append
 *                                        records forever (killed by the test)
 *   kv_writer DIR NAME SEED check        open read-write (cutting a torn
 *                                        tail), verify every loaded token and
 *                                        row is what `loop` writes; print the
 *                                        token count
 *   kv_writer DIR NAME SEED make N [FP]  create NAME with N tokens
 *   kv_writer DIR NAME SEED hold         open NAME read-write (holding its
 *                                        lock) and wait to be killed
 * Exit 0 ok, 1 verification failure, 2 usage, 3 I/O error. */
#include "config.h"

#include <errno.h>
#include <unistd.h>

#include "kv_test.h"

#define WL 4
#define WW 64

int main(int argc, char **argv)
{
	coli_err err = { 0 };
	kv_session *s;
	kv_loaded l;
	if (argc < 5)
		return 2;
	const char *dir = argv[1], *name = argv[2], *mode = argv[4];
	uint32_t seed = (uint32_t)strtoul(argv[3], NULL, 10);
	if (!strcmp(mode, "loop")) {
		int rc = kv_session_open(dir, name, FP_A, WL, WW, KV_OPEN_NO_ROWS, &s, NULL, &err);
		if (rc == -ENOENT)
			rc = kv_session_create(dir, name, FP_A, WL, WW, 0, &s, &err);
		if (rc < 0) {
			fprintf(stderr, "kv_writer: %s\n", err.msg);
			return 3;
		}
		printf("ready\n");
		fflush(stdout);
		for (int i = 0;; i++) {
			int pos = kv_session_n_tokens(s);
			if (kvt_append(s, seed, pos, 1 + i % 7, &err) < 0) {
				fprintf(stderr, "kv_writer: %s\n", err.msg);
				return 3;
			}
			if (i % 10 == 9 && kv_session_sync(s, &err) < 0)
				return 3;
			if (i % 25 == 24 && kv_session_truncate_tokens(s, pos, &err) < 0)
				return 3; /* a rewind (drops the record just written) */
			/* bound the file: a long rewind, then a compaction (which a
			 * kill may interrupt too) */
			if (pos > 3000 && (kv_session_truncate_tokens(s, 1000, &err) < 0 ||
					   kv_session_compact(s, &err) < 0)) {
				fprintf(stderr, "kv_writer: %s\n", err.msg);
				return 3;
			}
		}
	}
	if (!strcmp(mode, "check")) {
		if (kv_session_open(dir, name, FP_A, WL, WW, 0, &s, &l, &err) < 0) {
			fprintf(stderr, "kv_writer: %s\n", err.msg);
			return 3;
		}
		int ok = kvt_loaded_ok(&l, seed, l.n_tokens);
		printf("%d\n", l.n_tokens);
		kv_loaded_free(&l);
		kv_session_close(s);
		return ok ? 0 : 1;
	}
	if (!strcmp(mode, "hold")) {
		if (kv_session_open(dir, name, NULL, 0, 0, 0, &s, NULL, &err) < 0) {
			fprintf(stderr, "kv_writer: %s\n", err.msg);
			return 3;
		}
		printf("ready\n");
		fflush(stdout);
		for (;;)
			pause();
	}
	if (!strcmp(mode, "make") && argc >= 6) {
		int n = atoi(argv[5]);
		const char *fp = argc >= 7 ? argv[6] : FP_A;
		if (kv_session_create(dir, name, fp, WL, WW, 0, &s, &err) < 0) {
			fprintf(stderr, "kv_writer: %s\n", err.msg);
			return 3;
		}
		for (int pos = 0; pos < n; pos += 3)
			if (kvt_append(s, seed, pos, n - pos < 3 ? n - pos : 3, &err) < 0)
				return 3;
		kv_session_close(s);
		return 0;
	}
	return 2;
}
