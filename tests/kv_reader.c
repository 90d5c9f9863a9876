/* kv_reader.c - spilled rows read back by runs (kv_session_read_runs):
 * through an io_uring ring of 2 entries (so a call needs several
 * submissions) and through pread, each row lands at its position with
 * the bytes the writer wrote, runs across record boundaries and index
 * key slots included; the bytes counted are the rows asked for; a run
 * out of range and a file cut short under the record table fail, and the
 * ring keeps working after them. */
#include "config.h"

#include <errno.h>
#include <unistd.h>

#include "kv_reader.h"
#include "kv_test.h"
#include "test_util.h"

#define L 2
#define W 6
#define IL 1
#define IW 4
#define SEED 5u
#define N 40

static char *dir;

/* Every row of slot k in positions marked by runs equals the seed's
 * content; rows outside them are left as they were (the sentinel). */
static int rows_ok(const float *out, int k, const int *runs, int n_runs)
{
	const int w = k < L ? W : IW;
	for (int p = 0; p < N; p++) {
		int in = 0;
		for (int i = 0; i < n_runs; i++)
			in |= p >= runs[2 * i] && p < runs[2 * i] + runs[2 * i + 1];
		for (int j = 0; j < w; j++) {
			const float want = in ? kvt_value(SEED, (uint32_t)k, (uint32_t)p, (uint32_t)j) : -7.0f;
			if (memcmp(&out[(size_t)p * w + j], &want, sizeof want))
				return 0;
		}
	}
	return 1;
}

static void test_runs(kv_reader *rd)
{
	coli_err err = { 0 };
	kv_session *s;
	CHECK_RC(kv_session_open_indexed(dir, "s", FP_A, L, W, IL, IW, KV_OPEN_NO_ROWS, &s, NULL, &err), 0);
	/* records hold positions [0,3) [3,10) [10,15) [15,40): runs inside
	 * one, across two and three, single rows, nothing */
	static const int sets[][9] = {
		{ 1, 0, 40 },
		{ 4, 0, 1, 2, 2, 9, 3, 39, 1 },
		{ 3, 1, 13, 16, 2, 20, 20 },
		{ 2, 14, 1, 15, 1 },
		{ 0 },
	};
	float out[N * W];
	for (int k = 0; k < L + IL; k++)
		for (size_t t = 0; t < sizeof sets / sizeof sets[0]; t++) {
			const int n_runs = sets[t][0], *runs = &sets[t][1];
			const int w = k < L ? W : IW;
			for (int i = 0; i < N * W; i++)
				out[i] = -7.0f;
			uint64_t bytes = 0, want = 0;
			for (int i = 0; i < n_runs; i++)
				want += (uint64_t)runs[2 * i + 1] * w * 4;
			CHECK_RC(kv_session_read_runs(s, rd, k, runs, n_runs, out, &bytes, &err), 0);
			CHECK(rows_ok(out, k, runs, n_runs));
			CHECK(bytes == want);
		}
	/* out of range: refused, nothing counted */
	const int bad[2] = { 38, 3 };
	uint64_t bytes = 0;
	CHECK_RC(kv_session_read_runs(s, rd, 0, bad, 1, out, &bytes, &err), -EINVAL);
	CHECK(bytes == 0);
	CHECK_RC(kv_session_read_runs(s, rd, L + IL, sets[0] + 1, 1, out, &bytes, &err), -EINVAL);
	kv_session_close(s);
}

/* The file cut inside the last record (read-only: the record table was
 * read before the cut): -EIO, then the ring still reads a good file. */
static void test_short_file(kv_reader *rd)
{
	coli_err err = { 0 };
	kv_session *s;
	char path[4200];
	snprintf(path, sizeof path, "%s/s.kv", dir);
	CHECK_RC(kv_session_open_indexed(dir, "s", FP_A, L, W, IL, IW, KV_OPEN_NO_ROWS | KV_OPEN_READONLY, &s, NULL,
					 &err), 0);
	long size = (long)kv_session_bytes(s);
	CHECK(truncate(path, size - 200) == 0);
	float out[N * W];
	const int all[2] = { 0, N };
	uint64_t bytes = 0;
	CHECK_RC(kv_session_read_runs(s, rd, IL + L - 1, all, 1, out, &bytes, &err), -EIO);
	CHECK(bytes == 0);
	const int head[2] = { 0, 3 };
	CHECK_RC(kv_session_read_runs(s, rd, 0, head, 1, out, &bytes, &err), 0);
	CHECK(bytes == 3 * W * 4);
	kv_session_close(s);
}

static void make(void)
{
	coli_err err = { 0 };
	kv_session *s;
	CHECK_RC(kv_session_create_indexed(dir, "s", FP_A, L, W, IL, IW, KV_CREATE_OVERWRITE, &s, &err), 0);
	static const int counts[] = { 3, 7, 5, 25 };
	for (int i = 0, pos = 0; i < 4; pos += counts[i++])
		CHECK_RC(kvt_append(s, SEED, pos, counts[i], &err), 0);
	CHECK_RC(kv_session_sync(s, &err), 0);
	kv_session_close(s);
}

int main(void)
{
	kvt_quiet();
	dir = kvt_tmpdir();
	coli_err err = { 0 };
	kv_reader *rd = NULL;
	int rc = kv_reader_new(2, &rd, &err);
	if (rc)
		printf("io_uring unavailable (%s): pread only\n", err.msg);
	make();
	test_runs(NULL);
	if (rd) {
		test_runs(rd);
		/* more reads than entries: several rounds */
		CHECK(kv_reader_rounds(rd) > 1 && kv_reader_reads(rd) > kv_reader_rounds(rd));
		test_short_file(rd);
		make();
		test_runs(rd);
	} else {
		test_short_file(NULL);
	}
	kv_reader_free(rd);
	kvt_rmrf(dir);
	return test_summary(__FILE__);
}
