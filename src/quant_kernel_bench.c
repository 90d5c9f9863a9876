/* quant_kernel_bench.c - memory bandwidth vs kernel bandwidth (quant_kernel_bench.h).
 *
 * Buffers come from mmap so they are returned to the system at once, and
 * are first touched by the pool's threads (the pages then live where the
 * threads that stream them run).
 *
 * Beside quant_kernel_bench.h's figures: "int4_q8act" and "int8_q8act" are the
 * same shapes through coli_matmul_q8 (int8 activations, quant_kernels_q8.h; the
 * quantization of x is inside each call), each entry with
 * "ratio_to_f32_act", its GB/s over the f32-activation entry's;
 * "cache_resident_1thread" and each path of "..._by_isa" gain
 * "int4_q8act"/"int8_q8act" (ratio_to_f32_act there compares ns per
 * block); "q8act_isa" names the q8 code path; "int4_shapes_cached_1thread"
 * is [{ "shape", "what", "int4_ns_per_block", "int4_q8act_ns_per_block",
 * "ratio_q8act_to_f32_act" }]: the int4 kernels' compute at the GLM-5
 * shapes, one thread, the matrix kept in cache. */
#include "config.h"

#include "quant_kernel_bench.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "coli_log.h"
#include "quant_kernels_q8.h"
#include "util_time.h"

#define MIB (1024.0 * 1024.0)

static size_t llc_bytes(void)
{
	long v = -1;
#ifdef _SC_LEVEL3_CACHE_SIZE
	v = sysconf(_SC_LEVEL3_CACHE_SIZE);
	if (v <= 0)
		v = sysconf(_SC_LEVEL2_CACHE_SIZE);
#endif
	if (v <= 0) {
		FILE *f = fopen("/sys/devices/system/cpu/cpu0/cache/index3/size", "r");
		unsigned long k;
		if (f) {
			if (fscanf(f, "%luK", &k) == 1)
				v = (long)k * 1024;
			fclose(f);
		}
	}
	return v > 0 ? (size_t)v : (size_t)32 << 20;
}

static void *big_alloc(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
#ifdef MADV_HUGEPAGE
	madvise(p, bytes, MADV_HUGEPAGE); /* fewer TLB misses; optional */
#endif
	return p;
}

/* ---- triad ---- */

struct triad {
	float *a, *b, *c;
	size_t n;
	int parts;
	int init;
};

static void triad_task(void *arg, int i)
{
	struct triad *t = arg;
	size_t lo = t->n * (size_t)i / (size_t)t->parts;
	size_t hi = t->n * (size_t)(i + 1) / (size_t)t->parts;
	if (t->init) {
		for (size_t k = lo; k < hi; k++) {
			t->a[k] = 0.0f;
			t->b[k] = 1.0f;
			t->c[k] = 2.0f;
		}
		return;
	}
	float *restrict a = t->a;
	const float *restrict b = t->b, *restrict c = t->c;
	for (size_t k = lo; k < hi; k++)
		a[k] = b[k] + 3.0f * c[k];
}

static int bench_triad(coli_pool *p, size_t array_bytes, double budget, json_t *out)
{
	struct triad t = { 0 };
	t.n = array_bytes / sizeof(float);
	t.parts = coli_pool_size(p);
	t.a = big_alloc(array_bytes);
	t.b = big_alloc(array_bytes);
	t.c = big_alloc(array_bytes);
	int rc = -1;
	if (!t.a || !t.b || !t.c)
		goto out;
	t.init = 1;
	coli_pool_run(p, t.parts, triad_task, &t);
	t.init = 0;
	double best = 0.0, t_end = coli_now_s() + budget;
	int runs = 0;
	do {
		double t0 = coli_now_s();
		coli_pool_run(p, t.parts, triad_task, &t);
		double dt = coli_now_s() - t0;
		double gbps = 3.0 * (double)array_bytes / dt * 1e-9;
		if (gbps > best)
			best = gbps;
		runs++;
	} while (runs < 2 || (coli_now_s() < t_end && runs < 20));
	json_object_set_new(out, "array_bytes", json_integer((json_int_t)array_bytes));
	json_object_set_new(out, "runs", json_integer(runs));
	json_object_set_new(out, "gbps", json_real(best));
	rc = 0;
out:
	if (t.a)
		munmap(t.a, array_bytes);
	if (t.b)
		munmap(t.b, array_bytes);
	if (t.c)
		munmap(t.c, array_bytes);
	return rc;
}

/* ---- matvec on a weight set beyond the LLC ---- */

struct fill {
	uint8_t *buf;
	size_t bytes;
	int parts;
	int qtype;
};

/* Random nibbles/bytes with plausible scales; values do not matter for
 * speed, only that nothing is a compressible constant page. */
static void fill_task(void *arg, int i)
{
	struct fill *f = arg;
	size_t blk = f->qtype == COLI_Q_INT4 ? sizeof(coli_block_q4) : sizeof(coli_block_q8);
	size_t nblk = f->bytes / blk;
	size_t lo = nblk * (size_t)i / (size_t)f->parts;
	size_t hi = nblk * (size_t)(i + 1) / (size_t)f->parts;
	uint64_t s = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1);
	for (size_t k = lo; k < hi; k++) {
		uint8_t *b = f->buf + k * blk;
		for (size_t j = 0; j < blk; j += 8) {
			s ^= s << 13;
			s ^= s >> 7;
			s ^= s << 17;
			memcpy(b + j, &s, blk - j < 8 ? blk - j : 8);
		}
		if (f->qtype == COLI_Q_INT4) {
			coli_block_q4 *q = (coli_block_q4 *)b;
			q->d = coli_float_to_half(0.002f);
			q->m = coli_float_to_half(-0.015f);
		} else {
			float d = 0.0002f;
			memcpy(b, &d, sizeof d);
		}
	}
}

static const struct {
	int rows, cols;
	const char *what;
} shapes[] = {
	{ 2048, 6144, "expert gate/up" },
	{ 6144, 2048, "expert down" },
	{ 16384, 2048, "attention q_b-like" },
};

#define N_SHAPES ((int)(sizeof shapes / sizeof shapes[0]))

/* One matrix-vector product, with f32 activations (q8 == NULL) or int8
 * ones (the quantization of x is part of each call, as in the engine). */
static void one_matvec(coli_pool *p, const coli_qmat *w, const float *x, float *y,
		       coli_q8act *q8)
{
	if (q8)
		coli_matmul_q8(p, w, x, 1, y, q8);
	else
		coli_matvec(p, w, x, y);
}

/* f32 != NULL: the same shapes measured with f32 activations, whose
 * figures the entries are compared with (ratio_to_f32_act). */
static int bench_matvec(coli_pool *p, int qtype, coli_q8act *q8, size_t set_bytes,
			double budget, double triad_gbps, json_t *f32, json_t *arr)
{
	struct fill f = { 0 };
	f.bytes = set_bytes;
	f.parts = coli_pool_size(p);
	f.qtype = qtype;
	f.buf = big_alloc(set_bytes);
	static float x[16384], y[16384];
	if (!f.buf)
		return -1;
	coli_pool_run(p, f.parts, fill_task, &f);
	for (int j = 0; j < 16384; j++)
		x[j] = (float)((j * 37) % 101) * 0.01f - 0.5f;

	for (int s = 0; s < N_SHAPES; s++) {
		coli_qmat w = { qtype, shapes[s].rows, shapes[s].cols, NULL };
		size_t mb = coli_qtype_bytes(qtype, w.rows, w.cols);
		size_t count = set_bytes / mb;
		if (count < 1)
			count = 1;
		/* A pass streams every matrix of the set once; best pass wins
		 * (as for the triad: the machine may be shared). */
		double t_end = coli_now_s() + budget / N_SHAPES;
		double best = 1e30, total = 0.0;
		int passes = 0;
		do {
			double t0 = coli_now_s();
			for (size_t i = 0; i < count; i++) {
				w.data = f.buf + i * mb;
				one_matvec(p, &w, x, y, q8);
			}
			double dt = coli_now_s() - t0;
			total += dt;
			if (dt < best)
				best = dt;
			passes++;
		} while (passes < 2 || (coli_now_s() < t_end && passes < 50));
		double gbps = (double)mb * (double)count / best * 1e-9;
		double calls = (double)count * passes;
		json_t *o = json_object();
		char name[32];
		snprintf(name, sizeof name, "%dx%d", w.rows, w.cols);
		json_object_set_new(o, "shape", json_string(name));
		json_object_set_new(o, "what", json_string(shapes[s].what));
		json_object_set_new(o, "matrix_bytes", json_integer((json_int_t)mb));
		json_object_set_new(o, "matrices", json_integer((json_int_t)count));
		json_object_set_new(o, "passes", json_integer(passes));
		json_object_set_new(o, "us_per_call", json_real(best / (double)count * 1e6));
		json_object_set_new(o, "gbps", json_real(gbps));
		json_object_set_new(o, "mean_gbps", json_real((double)mb * calls / total * 1e-9));
		json_object_set_new(o, "ratio_to_triad", json_real(triad_gbps > 0 ? gbps / triad_gbps : 0.0));
		if (f32) {
			double fg = json_real_value(json_object_get(json_array_get(f32, (size_t)s), "gbps"));
			json_object_set_new(o, "ratio_to_f32_act", json_real(fg > 0 ? gbps / fg : 0.0));
		}
		json_array_append_new(arr, o);
	}
	munmap(f.buf, set_bytes);
	return 0;
}

/* The kernel's own ceiling: one thread, a 256 x 2048 matrix that stays in
 * L2, best of many calls. threads x this figure against the triad says
 * whether the machine is compute or memory bound for this kernel. */
static void bench_resident(int qtype, coli_q8act *q8, double budget, json_t *out)
{
	enum { ROWS = 256, COLS = 2048 };
	struct fill f = { 0 };
	size_t mb = coli_qtype_bytes(qtype, ROWS, COLS);
	static float x[COLS], y[ROWS];
	f.bytes = mb;
	f.parts = 1;
	f.qtype = qtype;
	f.buf = big_alloc(mb);
	if (!f.buf)
		return;
	fill_task(&f, 0);
	for (int j = 0; j < COLS; j++)
		x[j] = (float)(j % 7) * 0.1f;
	coli_qmat w = { qtype, ROWS, COLS, f.buf };
	double best = 1e30, t_end = coli_now_s() + budget;
	int calls = 0;
	do {
		double t0 = coli_now_s();
		one_matvec(NULL, &w, x, y, q8);
		double dt = coli_now_s() - t0;
		if (dt < best)
			best = dt;
		calls++;
	} while (calls < 10 || (coli_now_s() < t_end && calls < 100000));
	json_t *o = json_object();
	json_object_set_new(o, "shape", json_string("256x2048"));
	json_object_set_new(o, "ns_per_block", json_real(best / (ROWS * (COLS / COLI_QK)) * 1e9));
	json_object_set_new(o, "gbps_per_thread", json_real((double)mb / best * 1e-9));
	const char *key = qtype == COLI_Q_INT4 ? (q8 ? "int4_q8act" : "int4") : (q8 ? "int8_q8act" : "int8");
	if (q8) {
		json_t *fo = json_object_get(out, qtype == COLI_Q_INT4 ? "int4" : "int8");
		double fb = fo ? json_real_value(json_object_get(fo, "ns_per_block")) : 0.0;
		double qb = best / (ROWS * (COLS / COLI_QK)) * 1e9;
		json_object_set_new(o, "ratio_to_f32_act", json_real(qb > 0 && fb > 0 ? fb / qb : 0.0));
	}
	json_object_set_new(out, key, o);
	munmap(f.buf, mb);
}

/* The int4 kernels' compute at the GLM-5 shapes themselves: one thread,
 * one matrix called again and again (it stays in L2/L3 as it fits), f32
 * activations vs q8. This is the figure the q8 path is for: the streamed
 * figures above are capped by the memory bus for both. */
static void bench_shapes_cached(coli_q8act *q8, double budget, json_t *arr)
{
	static float x[16384], y[16384];
	for (int j = 0; j < 16384; j++)
		x[j] = (float)((j * 37) % 101) * 0.01f - 0.5f;
	for (int s = 0; s < N_SHAPES; s++) {
		struct fill f = { 0 };
		coli_qmat w = { COLI_Q_INT4, shapes[s].rows, shapes[s].cols, NULL };
		f.bytes = coli_qtype_bytes(COLI_Q_INT4, w.rows, w.cols);
		f.parts = 1;
		f.qtype = COLI_Q_INT4;
		f.buf = big_alloc(f.bytes);
		if (!f.buf)
			return;
		fill_task(&f, 0);
		w.data = f.buf;
		double ns[2];
		for (int mode = 0; mode < 2; mode++) {
			double best = 1e30, t_end = coli_now_s() + budget;
			int calls = 0;
			do {
				double t0 = coli_now_s();
				one_matvec(NULL, &w, x, y, mode ? q8 : NULL);
				double dt = coli_now_s() - t0;
				best = dt < best ? dt : best;
				calls++;
			} while (calls < 5 || (coli_now_s() < t_end && calls < 10000));
			ns[mode] = best / ((double)w.rows * (w.cols / COLI_QK)) * 1e9;
		}
		munmap(f.buf, f.bytes);
		json_t *o = json_object();
		char name[32];
		snprintf(name, sizeof name, "%dx%d", w.rows, w.cols);
		json_object_set_new(o, "shape", json_string(name));
		json_object_set_new(o, "what", json_string(shapes[s].what));
		json_object_set_new(o, "int4_ns_per_block", json_real(ns[0]));
		json_object_set_new(o, "int4_q8act_ns_per_block", json_real(ns[1]));
		json_object_set_new(o, "ratio_q8act_to_f32_act", json_real(ns[1] > 0 ? ns[0] / ns[1] : 0.0));
		json_array_append_new(arr, o);
	}
}

/* The same ceiling for every code path this CPU has, so the report shows
 * what the process's path gains over the others. The path is forced for
 * the measurement and then forced back to the process's own choice (the
 * same path, so later kernels compute the same bits); nothing else runs
 * kernels meanwhile (see coli_bench_kernels' callers). */
static void bench_resident_paths(coli_q8act *q8, double budget, json_t *out)
{
	static const char *const paths[] = { "avx512", "avx2", "generic" };
	const char *own = coli_kernels_isa();
	for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
		if (coli_kernels_force_isa(paths[i]))
			continue; /* not on this CPU or build */
		json_t *o = json_object();
		bench_resident(COLI_Q_INT4, NULL, budget, o);
		bench_resident(COLI_Q_INT8, NULL, budget, o);
		if (q8) {
			bench_resident(COLI_Q_INT4, q8, budget, o);
			bench_resident(COLI_Q_INT8, q8, budget, o);
			json_object_set_new(o, "q8act_isa", json_string(coli_kernels_q8_isa()));
		}
		json_object_set_new(out, paths[i], o);
	}
	coli_kernels_force_isa(own);
}

json_t *coli_bench_kernels(coli_pool *p, double seconds_budget)
{
	if (seconds_budget <= 0)
		seconds_budget = 3.0;
	size_t llc = llc_bytes();
	/* 3 x 256 MiB at least, and twice the LLC in all */
	size_t array_bytes = (size_t)256 << 20;
	if (array_bytes * 3 < llc * 2)
		array_bytes = (llc * 2 / 3 + 4095) & ~(size_t)4095;
	/* weights: twice the LLC, at least 512 MiB */
	size_t set_bytes = llc * 2 > ((size_t)512 << 20) ? llc * 2 : (size_t)512 << 20;

	json_t *out = json_object();
	json_t *triad = json_object();
	json_t *q4 = json_array(), *q8 = json_array();
	json_t *q4a = json_array(), *q8a = json_array();
	/* x of the widest shape, quantized per call by the q8act entries */
	coli_q8act act = { 0 };
	coli_q8act *actp = coli_q8act_init(&act, 1, 16384, NULL) == 0 ? &act : NULL;
	json_object_set_new(out, "isa", json_string(coli_kernels_isa()));
	json_object_set_new(out, "q8act_isa", json_string(coli_kernels_q8_isa()));
	json_object_set_new(out, "threads", json_integer(coli_pool_size(p)));
	json_object_set_new(out, "llc_bytes", json_integer((json_int_t)llc));
	json_object_set_new(out, "weight_set_bytes", json_integer((json_int_t)set_bytes));
	json_object_set_new(out, "triad", triad);
	json_object_set_new(out, "int4", q4);
	json_object_set_new(out, "int8", q8);
	json_object_set_new(out, "int4_q8act", q4a);
	json_object_set_new(out, "int8_q8act", q8a);
	json_t *res = json_object();
	json_object_set_new(out, "cache_resident_1thread", res);
	bench_resident(COLI_Q_INT4, NULL, seconds_budget * 0.02, res);
	bench_resident(COLI_Q_INT8, NULL, seconds_budget * 0.02, res);
	if (actp) {
		bench_resident(COLI_Q_INT4, actp, seconds_budget * 0.02, res);
		bench_resident(COLI_Q_INT8, actp, seconds_budget * 0.02, res);
	}
	json_t *by_isa = json_object();
	json_object_set_new(out, "cache_resident_1thread_by_isa", by_isa);
	bench_resident_paths(actp, seconds_budget * 0.01, by_isa);
	if (actp) {
		json_t *cached = json_array();
		json_object_set_new(out, "int4_shapes_cached_1thread", cached);
		bench_shapes_cached(actp, seconds_budget * 0.01, cached);
	}

	if (bench_triad(p, array_bytes, seconds_budget * 0.3, triad) < 0)
		goto fail;
	double tg = json_real_value(json_object_get(triad, "gbps"));
	if (bench_matvec(p, COLI_Q_INT4, NULL, set_bytes, seconds_budget * 0.2, tg, NULL, q4) < 0)
		goto fail;
	if (actp && bench_matvec(p, COLI_Q_INT4, actp, set_bytes, seconds_budget * 0.2, tg, q4, q4a) < 0)
		goto fail;
	if (bench_matvec(p, COLI_Q_INT8, NULL, set_bytes, seconds_budget * 0.13, tg, NULL, q8) < 0)
		goto fail;
	if (actp && bench_matvec(p, COLI_Q_INT8, actp, set_bytes, seconds_budget * 0.13, tg, q8, q8a) < 0)
		goto fail;
	coli_debug("bench kernels: triad %.1f GB/s (%.0f MiB arrays)", tg, (double)array_bytes / MIB);
	coli_q8act_free(&act);
	return out;
fail:
	coli_warn("bench kernels: could not map %.0f MiB of memory", (double)set_bytes / MIB);
	coli_q8act_free(&act);
	json_decref(out);
	return NULL;
}
