/* store_checksum.c - records read from disk are checked against their
 * CRC-32C (container format 2), and a failed read never sticks:
 *   - a flipped bit in one record fails the acquire that needs it (-EBADMSG,
 *     the message names the layer, expert and shard), is counted in the
 *     stats and logged once however often it is read; other records serve;
 *   - the byte restored: the same record serves again, exact bytes, same
 *     store (no restart), with a "verifies again" line;
 *   - a shard truncated and restored (in place, or by renaming a copy over
 *     it: the store reopens the path), a read failing with EIO, a read
 *     damaged in flight (COLI_FAULT_READ_FLIP): the next use reads again
 *     and gets the right bytes; this is the engine's order (request the
 *     layer's set, acquire one record at a time, release), in which a
 *     failed slot used to stay in the map and fail every later visit;
 *   - --no-verify-checksums serves the damaged bytes (the benchmark's
 *     switch) and checks nothing. */
#include "config.h"

#include "coli_log.h"
#include "expert_store_stats.h"
#include "expert_store.h"
#include "store_test.h"
#include "util_crc32c.h"

#define LAYERS 3 /* layer 0 dense, 1..2 MoE */
#define EXPERTS 8
#define TOPK 2
#define REC 8192

static int errors, infos_again;

static void sink(void *opaque, int level, const char *line)
{
	(void)opaque;
	if (level == COLI_LOG_ERROR)
		errors++;
	if (level == COLI_LOG_INFO && strstr(line, "verifies again"))
		infos_again++;
	if (getenv("STORE_TEST_VERBOSE"))
		fprintf(stderr, "log: %s\n", line);
}

static uint32_t *crc_rows[LAYERS];

/* The manifest's checksums of the hand-built shards. */
static void set_crcs(test_model *m)
{
	uint64_t *buf = malloc(REC);
	REQUIRE(buf);
	for (int l = 1; l < LAYERS; l++) {
		crc_rows[l] = malloc(EXPERTS * sizeof(uint32_t));
		REQUIRE(crc_rows[l]);
		for (int e = 0; e < EXPERTS; e++) {
			for (size_t i = 0; i < REC / 8; i++)
				buf[i] = tm_word(l, e, i);
			crc_rows[l][e] = crc32c_update(0, buf, REC);
		}
	}
	free(buf);
	m->c.version = 2;
	m->c.expert_crc = crc_rows;
}

static expert_store *open_store(test_model *m, int no_checksums)
{
	expert_store_opts o;
	expert_store_opts_default(&o);
	o.cache_bytes = 0; /* every use reads from disk, as with --expert-cache 0 */
	o.pin_bytes = 0;
	o.prefetch = 0;
	o.direct = 0;
	o.no_checksums = no_checksums;
	expert_store *s = NULL;
	coli_err err;
	coli_err_clear(&err);
	if (expert_store_open(&m->c, &o, &s, &err)) {
		fprintf(stderr, "open: %s\n", err.msg);
		exit(1);
	}
	return s;
}

/* One engine visit of layer 1 for experts a, b: request both, acquire one
 * at a time, release. Returns the first acquire's error (0: both served,
 * bytes checked), its message in msg. */
static int visit(test_model *m, expert_store *s, int a, int b, char *msg, size_t cap)
{
	int ex[TOPK] = { a, b }, rc = 0;
	coli_err err;
	coli_err_clear(&err);
	msg[0] = '\0';
	expert_store_request(s, 1, ex, TOPK);
	for (int j = 0; j < TOPK && !rc; j++) {
		const void *rec = NULL;
		rc = expert_store_acquire(s, 1, &ex[j], 1, &rec, &err);
		if (rc)
			snprintf(msg, cap, "%s", err.msg);
		else
			CHECK(tm_check(m, 1, ex[j], rec), "layer 1 expert %d: wrong bytes", ex[j]);
	}
	expert_store_release(s, 1);
	return rc;
}

static uint64_t crc_errors(const expert_store *s)
{
	expert_stats_summary sum;
	expert_stats_snapshot(expert_store_stats(s), &sum);
	return sum.checksum_errors;
}

static void poke(const test_model *m, int layer, int e, size_t at, uint8_t x)
{
	int fd = open(m->paths[layer], O_RDWR);
	uint8_t b;
	REQUIRE(fd >= 0);
	off_t off = (off_t)e * REC + (off_t)at;
	REQUIRE(pread(fd, &b, 1, off) == 1);
	b ^= x;
	REQUIRE(pwrite(fd, &b, 1, off) == 1);
	close(fd);
}

static void test_flipped_bit(test_model *m)
{
	char msg[1024];
	expert_store *s = open_store(m, 0);
	/* (a record read once stays in RAM: damage the ones not yet read) */
	CHECK_RC(visit(m, s, 2, 4, msg, sizeof msg), 0);
	CHECK(crc_errors(s) == 0);
	poke(m, 1, 3, 1000, 0x20);
	errors = 0;
	/* the request that needs it fails, naming it */
	CHECK_RC(visit(m, s, 2, 3, msg, sizeof msg), -EBADMSG);
	CHECK(strstr(msg, "layer 1 expert 3") && strstr(msg, "shard-001.bin") && strstr(msg, "CRC-32C"),
	      "message: %s", msg);
	CHECK(crc_errors(s) == 1);
	CHECK(errors == 1, "%d error lines", errors);
	/* the rest keeps working */
	CHECK_RC(visit(m, s, 2, 4, msg, sizeof msg), 0);
	/* read again (not cached), fails again, reported once */
	CHECK_RC(visit(m, s, 3, 2, msg, sizeof msg), -EBADMSG);
	CHECK(crc_errors(s) == 2);
	CHECK(errors == 1, "%d error lines", errors);
	/* restored: served again by the same store, exact bytes */
	poke(m, 1, 3, 1000, 0x20);
	infos_again = 0;
	CHECK_RC(visit(m, s, 2, 3, msg, sizeof msg), 0);
	CHECK(infos_again == 1);
	CHECK(crc_errors(s) == 2);
	/* another record damaged later: reported too */
	poke(m, 1, 0, 1, 0x01);
	CHECK_RC(visit(m, s, 0, 2, msg, sizeof msg), -EBADMSG);
	CHECK(errors == 2, "%d error lines", errors);
	poke(m, 1, 0, 1, 0x01);
	CHECK_RC(visit(m, s, 0, 2, msg, sizeof msg), 0);
	expert_store_free(s);

	/* the switch: nothing checked, the damaged bytes are served */
	poke(m, 1, 5, 77, 0x80);
	s = open_store(m, 1);
	int ex = 5;
	const void *rec = NULL;
	coli_err err;
	coli_err_clear(&err);
	CHECK_RC(expert_store_acquire(s, 1, &ex, 1, &rec, &err), 0);
	CHECK(rec && !tm_check(m, 1, 5, rec));
	CHECK(crc_errors(s) == 0);
	expert_store_release(s, 1);
	expert_store_free(s);
	poke(m, 1, 5, 77, 0x80);
}

static void test_truncated_shard(test_model *m)
{
	char msg[1024];
	expert_store *s = open_store(m, 0);
	CHECK_RC(visit(m, s, 1, 2, msg, sizeof msg), 0);
	REQUIRE(truncate(m->paths[1], (off_t)REC * 4) == 0);
	CHECK(visit(m, s, 6, 1, msg, sizeof msg) < 0);
	CHECK(strstr(msg, "layer 1 expert 6"), "message: %s", msg);
	/* restored in place (as cp or a restore tool writes it back) */
	tm_write_shards(m, m->dir);
	CHECK_RC(visit(m, s, 6, 7, msg, sizeof msg), 0);
	CHECK_RC(visit(m, s, 7, 6, msg, sizeof msg), 0);
	/* truncated in place, then restored by renaming a sound copy over it:
	 * the store's open file stays the truncated one unless it reopens */
	char tmp[600];
	snprintf(tmp, sizeof tmp, "%s/copy", m->dir);
	REQUIRE(mkdir(tmp, 0777) == 0);
	tm_write_shards(m, tmp);
	REQUIRE(truncate(m->paths[1], (off_t)REC * 2) == 0);
	CHECK(visit(m, s, 5, 4, msg, sizeof msg) < 0);
	char moved[700];
	snprintf(moved, sizeof moved, "%s/experts/shard-001.bin", tmp);
	REQUIRE(rename(moved, m->paths[1]) == 0);
	CHECK_RC(visit(m, s, 5, 4, msg, sizeof msg), 0);
	CHECK_RC(visit(m, s, 3, 4, msg, sizeof msg), 0);
	tm_rmrf(tmp);
	expert_store_free(s);
}

#ifdef COLI_FAULT_INJECTION
/* One failed or damaged read of a sound file: the next visit serves it. */
static void with_fault(test_model *m, const char *var, int want)
{
	char msg[1024];
	setenv(var, "1", 1);
	expert_store *s = open_store(m, 0);
	unsetenv(var);
	CHECK_RC(visit(m, s, 1, 2, msg, sizeof msg), want);
	for (int i = 0; i < 3; i++)
		CHECK_RC(visit(m, s, 1, 2, msg, sizeof msg), 0);
	expert_store_free(s);
}
#endif

int main(void)
{
	coli_log_set_sink(sink, NULL);
	coli_log_set_level(COLI_LOG_INFO);
	test_model m;
	tm_make(&m, LAYERS, EXPERTS, TOPK, REC);
	set_crcs(&m);
	test_flipped_bit(&m);
	test_truncated_shard(&m);
#ifdef COLI_FAULT_INJECTION
	with_fault(&m, "COLI_FAULT_READ_EIO", -EIO);
	with_fault(&m, "COLI_FAULT_READ_FLIP", -EBADMSG);
#else
	if (getenv("CI") && !strcmp(getenv("CI"), "true")) {
		fprintf(stderr, "store_checksum: built without --enable-fault-injection (CI=true: failing)\n");
		return 1;
	}
#endif
	for (int l = 1; l < LAYERS; l++)
		free(crc_rows[l]);
	tm_free(&m);
	return test_summary(__FILE__);
}
