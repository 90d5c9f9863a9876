/* fuzz_kv.c - libFuzzer target for the KV session reader (kv_file.c,
 * kv_session.c): the bytes of a NAME.kv file go through kv_file_inspect
 * (with CRC verification and the record list), a read-only and then a
 * read-write kv_session_open (which cuts a torn tail), reads of its rows
 * and kv_file_match_prefix. Invariants: a refusal explains itself; what
 * inspect reports lies inside the file; open loads exactly the tokens
 * inspect counted; the prefix match of the loaded history is all of it.
 *
 * Built by tests/fuzz/run-fuzz.sh; linked into tests/fuzz_kv_corpus so
 * the seeds in tests/fuzz/corpus-kv run in `make check`. */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "kv_file.h"

/* 1 when the last input was loaded by the read-only kv_session_open (read
 * by tests/fuzz_corpus.c for ok-* / bad-* seeds) */
int fuzz_accepted;

/* 1 when the session opened */
static int check_open(const char *dir, const char *path, const kv_file_report *rep, int flags)
{
	kv_session *s = NULL;
	kv_loaded l = { 0 };
	coli_err err = { 0 };
	int rc = kv_session_open(dir, "fz", NULL, 0, 0, flags, &s, &l, &err);
	if (rc < 0) {
		if (!err.msg[0] || s)
			abort();
		/* only a corrupt middle (or a later write failure) refuses a
		 * file inspect could read */
		if (rep && rep->status != KV_FILE_CORRUPT && rc != -ENOMEM && rc != -EBUSY)
			abort();
		return 0;
	}
	if (!rep || rep->status == KV_FILE_CORRUPT || l.n_tokens != rep->n_tokens ||
	    l.n_tokens != kv_session_n_tokens(s))
		abort();
	int n = l.n_tokens < 8 ? l.n_tokens : 8;
	uint64_t w = (uint64_t)kv_session_width(s);
	if (n > 0 && w * (uint64_t)n <= (1u << 16)) {
		float *buf = malloc(sizeof(float) * w * (size_t)n);
		if (!buf)
			abort();
		if (kv_session_read_rows(s, 0, l.n_tokens - n, n, buf, &err) < 0)
			abort();
		if (memcmp(buf, l.rows[0] + (size_t)(l.n_tokens - n) * w, sizeof(float) * w * (size_t)n))
			abort();
		free(buf);
	}
	if (l.n_tokens > 0) {
		int match = -1;
		if (kv_file_match_prefix(path, rep->hdr.fingerprint, l.tokens, l.n_tokens, &match, &err) < 0 ||
		    match != l.n_tokens)
			abort();
	}
	kv_session_close(s);
	kv_loaded_free(&l);
	return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char dir[64], path[128];
	fuzz_quiet();
	if (fuzz_tmpdir(dir, sizeof dir))
		abort();
	snprintf(path, sizeof path, "%s/fz.kv", dir);
	fuzz_write(path, data, size);

	kv_file_report rep;
	coli_err err = { 0 };
	int ok = kv_file_inspect(path, KV_INSPECT_VERIFY | KV_INSPECT_RECORDS, &rep, &err) == 0;
	if (!ok && !err.msg[0])
		abort();
	if (ok) {
		if (rep.valid_bytes > rep.file_bytes || rep.n_tokens < 0 ||
		    (rep.status != KV_FILE_OK) != (rep.problem[0] != '\0'))
			abort();
		for (int i = 0; i < rep.n_recs; i++)
			if (rep.recs[i].offset + rep.recs[i].bytes > rep.valid_bytes)
				abort();
	}
	fuzz_accepted = check_open(dir, path, ok ? &rep : NULL, KV_OPEN_READONLY);
	check_open(dir, path, ok ? &rep : NULL, 0);   /* read-write: cuts a torn tail */
	if (ok)
		kv_file_report_free(&rep);
	fuzz_rmtree(dir);
	return 0;
}
