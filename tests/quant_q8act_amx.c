/* quant_q8act_amx.c - the AMX q8 row kernels (quant_kernels_q8_amx.c), bit for
 * bit against the portable kernels (kernels_q8.c, the definition of the
 * arithmetic), on the real tiles where this CPU and kernel have them and
 * always on emulated ones (quant_q8act_amxemu.c): int4 and int8 weights,
 * rows ragged against the 16-row groups and 32-row panels, columns ragged
 * against the 8-block chunks, n = 1..70 and 130 inputs (ragged tiles of
 * 16, passes of 64, fewer than 16 in all), zero blocks of x, zero weight
 * blocks, int8 weights of -128, and the rows cut into pieces as the pool
 * and coli_matmul_q8_rows cut them. Also: the "amx" path through
 * coli_matmul_q8_rows (its VNNI rows below 16 inputs) gives the same
 * bits; the test re-runs itself with $COLI_KERNELS_AMX=0 (the path left
 * out) and, on AMX hardware, =1 (the library's path on the tiles for
 * every n).
 *
 * Where neither half can run (no AVX-512 VNNI: the emulation's float
 * part is the file's own AVX-512 code) only the dispatch is checked (it
 * refuses the path), and the output says the rows were not; that is a
 * failure when $COLI_TEST_ISA_REQUIRED names amx-emu, and the real tiles
 * not running one when it names amx (tools/isa-required.sh). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quant_kernels.h"
#include "quant_kernels_q8.h"
#include "quant.h"
#include "quant_q8act_amx.h"
#include "test_util.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
/* the real tiles: the file as built, its exported function renamed (the
 * library's copy stays the path's), its static tile functions reached */
#define coli_kernels_q8_amx_rows real_kernels_q8_amx_rows
#include "quant_kernels_q8_amx.c"
#undef coli_kernels_q8_amx_rows

coli_q8_rows_fn amx_real_rows(int qtype)
{
	if (!have_amx())
		return NULL;
	return qtype == COLI_Q_INT8 ? rows_q8_amx : qtype == COLI_Q_INT4 ? rows_q4_amx : NULL;
}
#else
coli_q8_rows_fn amx_real_rows(int qtype)
{
	(void)qtype;
	return NULL;
}
#endif

struct shape {
	int rows, cols;
};

/* rows: one, less than a group, a group, a panel, ragged panels; columns:
 * fewer blocks than a chunk, one chunk, ragged chunks */
static const struct shape shapes[] = {
	{ 1, 64 },   { 5, 128 },   { 16, 512 },  { 17, 576 },   { 32, 1088 },
	{ 33, 640 }, { 47, 2048 }, { 64, 192 },  { 100, 1024 },
};
#define N_SHAPES ((int)(sizeof shapes / sizeof shapes[0]))
static const int n_list[] = { 1, 2, 3, 7, 15, 16, 17, 31, 32, 33, 48, 63, 64, 65, 70, 130 };
#define N_NS ((int)(sizeof n_list / sizeof n_list[0]))
#define N_MAX 130

struct impl {
	const char *name;
	coli_q8_rows_fn (*get)(int qtype);
};
static const struct impl impls[] = { { "real", amx_real_rows }, { "emulated", amx_emu_rows } };

static int ran_real, ran_emu;

/* whole, and in pieces of 16, 32 and odd sizes (the pool cuts multiples
 * of 16; coli_matmul_q8_rows takes any range) */
static void run_pieces(coli_q8_rows_fn f, const coli_qmat *w, const coli_q8act *a, int n, float *y,
		       int how)
{
	if (how == 0) {
		f(w, a, n, 0, w->rows, y);
		return;
	}
	for (int r0 = 0; r0 < w->rows;) {
		int r1 = r0 + (how == 1 ? 16 : (r0 % 2 ? 7 : 37));
		r1 = r1 < w->rows ? r1 : w->rows;
		f(w, a, n, r0, r1, y);
		r0 = r1;
	}
}

static void check_shape(int qtype, struct shape sh, float *x, const float *wf)
{
	const int nb = sh.cols / 64;
	const size_t ny = (size_t)N_MAX * sh.rows;
	float *y0 = malloc(ny * sizeof *y0), *y = malloc(ny * sizeof *y);
	void *wq = malloc(coli_qtype_bytes(qtype, sh.rows, sh.cols));
	coli_q8act a = { 0 };
	REQUIRE(y0 && y && wq && !coli_q8act_init(&a, N_MAX, sh.cols, NULL), "memory");
	CHECK(coli_quantize_rows(qtype, wf, sh.rows, sh.cols, wq) == 0, "quantize weights");
	if (qtype == COLI_Q_INT8) /* the extreme weight, in the first and last blocks */
		for (int r = 0; r < sh.rows; r++) {
			coli_block_q8 *blk = (coli_block_q8 *)wq + (size_t)r * nb;
			blk[0].q[r % 64] = -128;
			blk[nb - 1].q[63 - r % 64] = -128;
			blk[nb - 1].q[r % 32] = -128;
		}
	coli_qmat w = { qtype, sh.rows, sh.cols, wq };
	for (int ni = 0; ni < N_NS; ni++) {
		const int n = n_list[ni];
		coli_kernels_q8_force_path("generic");
		CHECK(coli_q8act_quantize(&a, x, n, sh.cols) == 0, "quantize x");
		coli_matmul_q8_rows(&w, &a, 0, sh.rows, y0);
		coli_kernels_q8_force_path(NULL);
		for (int ii = 0; ii < 2; ii++) {
			coli_q8_rows_fn f = impls[ii].get(qtype);
			if (!f)
				continue;
			*(ii ? &ran_emu : &ran_real) += 1;
			for (int how = 0; how < 3; how++) {
				memset(y, 0xff, (size_t)n * sh.rows * sizeof *y);
				run_pieces(f, &w, &a, n, y, how);
				CHECK(!memcmp(y, y0, (size_t)n * sh.rows * sizeof *y),
				      "amx (%s) differs from generic: %s %dx%d n%d cut %d", impls[ii].name,
				      coli_qtype_name(qtype), sh.rows, sh.cols, n, how);
			}
		}
		/* the path as the library dispatches it */
		if (!coli_kernels_q8_force_path("amx")) {
			memset(y, 0xff, (size_t)n * sh.rows * sizeof *y);
			coli_matmul_q8_rows(&w, &a, 0, sh.rows, y);
			CHECK(!memcmp(y, y0, (size_t)n * sh.rows * sizeof *y),
			      "amx path differs from generic: %s %dx%d n%d", coli_qtype_name(qtype),
			      sh.rows, sh.cols, n);
			coli_kernels_q8_force_path(NULL);
		}
	}
	coli_q8act_free(&a);
	free(y0);
	free(y);
	free(wq);
}

int main(int argc, char **argv)
{
	(void)argc;
	__builtin_cpu_init();
	const char *off = getenv("COLI_KERNELS_AMX");
	if (off && !strcmp(off, "0")) {
		/* the re-run below: the path is left out */
		CHECK(coli_kernels_q8_force_path("amx") == -ENOTSUP, "COLI_KERNELS_AMX=0 leaves amx out");
		CHECK(strcmp(coli_kernels_q8_isa(), "amx") != 0, "q8 path not amx");
		return test_summary(argv[0]);
	}
	const size_t xmax = (size_t)N_MAX * 2048, wmax = (size_t)100 * 2048;
	float *x = malloc(xmax * sizeof *x), *wf = malloc(wmax * sizeof *wf);
	REQUIRE(x && wf, "memory");
	for (size_t i = 0; i < xmax; i++)
		x[i] = frand() * (float)(1 + i / 64 % 5);
	for (size_t k = 0; k < N_MAX; k += 3) /* zero blocks (d = 0), one per third input */
		memset(x + k * 2048 + (k % 4) * 64, 0, 64 * sizeof *x);
	for (size_t i = 0; i < wmax; i++)
		wf[i] = frand() * 0.05f + (i % 64 == 3 ? 0.02f : 0.0f);
	memset(wf + 64, 0, 64 * sizeof *wf); /* a zero weight block */
	/* the weights and x are read with each shape's column count as stride,
	 * so the same buffers serve every shape */
	for (int s = 0; s < N_SHAPES; s++) {
		check_shape(COLI_Q_INT4, shapes[s], x, wf);
		check_shape(COLI_Q_INT8, shapes[s], x, wf);
	}
	CHECK(amx_emu_misuse() == 0, "tiles used as real ones would not take: %d", amx_emu_misuse());
	printf("amx rows checked on real tiles: %d runs, emulated: %d runs\n", ran_real, ran_emu);
	if (!ran_real && test_isa_required("amx"))
		FAIL("amx: named in COLI_TEST_ISA_REQUIRED but the real tiles did not run");
	if (!ran_real && !ran_emu) {
		/* what this CPU can still be checked for: the dispatch refuses the
		 * path instead of running tiles it does not have */
		if (test_isa_required("amx-emu")) /* amx itself: failed above */
			FAIL("amx-emu: named in COLI_TEST_ISA_REQUIRED but the emulation did not run");
		CHECK(coli_kernels_q8_force_path("amx") == -ENOTSUP, "no AVX-512 VNNI: the amx path is refused");
		CHECK(strcmp(coli_kernels_q8_isa(), "amx") != 0, "q8 path not amx");
		printf("no AVX-512 VNNI here: the tiles and their emulation were not checked on this CPU, "
		       "only that the dispatch refuses them\n");
	}
	free(x);
	free(wf);
	int rc = test_summary(argv[0]);
	if (rc == 0 && !off) {
		/* the switch, in fresh processes (the choice is made once; only
		 * where the CPU has AMX does it change anything) */
		char cmd[4096];
		snprintf(cmd, sizeof cmd, "COLI_KERNELS_AMX=0 '%s'", argv[0]);
		CHECK(system(cmd) == 0, "COLI_KERNELS_AMX=0 run");
		if (ran_real) {
			snprintf(cmd, sizeof cmd, "COLI_KERNELS_AMX=1 '%s'", argv[0]);
			CHECK(system(cmd) == 0, "COLI_KERNELS_AMX=1 run");
		}
		rc = test_summary(argv[0]);
	}
	return rc;
}
