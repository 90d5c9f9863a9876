/* convert_write.c - writing one output file of the container.
 *
 * Each file is produced as PATH.tmp, fsync'd and renamed, so a crash leaves
 * either no file or a complete one (plus a stray .tmp that the next run
 * truncates). Memory: one source tensor as f32 plus its quantized copy (for
 * an expert shard: one tensor plus one record), never a whole file. */
#include "config.h"

#define COLI_CONVERT_INTERNAL 1
#include "convert.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "quant_kernels.h"
#include "model_manifest.h"
#include "quant.h"
#include "util_crc32c.h"
#include "util_sha256.h"
#include "util_file.h"

typedef struct wfile {
	int fd;
	char *tmp, *final;
	uint64_t off;
	coli_sha256 sha;           /* of the bytes written, so no re-read */
} wfile;

static int w_open(wfile *w, const char *out_dir, const char *rel, coli_err *err)
{
	memset(w, 0, sizeof *w);
	w->fd = -1;
	coli_sha256_init(&w->sha);
	w->final = manifest_join(out_dir, rel);
	if (!w->final)
		return coli_err_set(err, -ENOMEM, "out of memory");
	size_t n = strlen(w->final);
	w->tmp = malloc(n + 5);
	if (!w->tmp)
		return coli_err_set(err, -ENOMEM, "out of memory");
	memcpy(w->tmp, w->final, n);
	memcpy(w->tmp + n, ".tmp", 5);
	/* Make the sub-directory (dense/, experts/ ...) on first use. */
	char *slash = strrchr(w->final, '/');
	if (slash) {
		*slash = '\0';
		if (mkdir(w->final, 0755) < 0 && errno != EEXIST) {
			int e = errno;
			*slash = '/';
			return coli_err_set(err, -e, "%s: %s", w->final, strerror(e));
		}
		*slash = '/';
	}
	w->fd = open(w->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (w->fd < 0)
		return coli_err_set(err, -errno, "%s: %s", w->tmp, strerror(errno));
	return 0;
}

#ifdef COLI_FAULT_INJECTION
/* COLI_CONVERT_ENOSPC_AFTER_BYTES=N: writes fail with ENOSPC once N bytes
 * were written by this process (tests: a full disk fails cleanly, and the
 * next run resumes). */
static int fault_enospc(size_t n)
{
	static uint64_t total;
	const char *s = getenv("COLI_CONVERT_ENOSPC_AFTER_BYTES");
	total += n;
	return s && *s && total > strtoull(s, NULL, 10);
}
#else
static int fault_enospc(size_t n)
{
	(void)n;
	return 0;
}
#endif

static int w_write(wfile *w, const void *data, size_t n, coli_err *err)
{
	const char *p = data;
	if (fault_enospc(n))
		return coli_err_set(err, -ENOSPC, "%s: write failed: %s", w->tmp, strerror(ENOSPC));
	coli_sha256_update(&w->sha, data, n);
	while (n) {
		ssize_t r = write(w->fd, p, n > (1u << 30) ? (1u << 30) : n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return coli_err_set(err, -errno, "%s: write failed: %s", w->tmp,
					    strerror(errno));
		p += r;
		n -= (size_t)r;
		w->off += (uint64_t)r;
	}
	return 0;
}

static int w_pad_to(wfile *w, uint64_t off, coli_err *err)
{
	static const char zero[4096];
	while (w->off < off) {
		uint64_t n = off - w->off;
		int rc = w_write(w, zero, n > sizeof zero ? sizeof zero : (size_t)n, err);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static int w_finish(wfile *w, coli_err *err)
{
	int rc = coli_file_commit(w->fd, w->tmp, w->final, err);
	if (close(w->fd) < 0 && rc == 0)
		rc = coli_err_set(err, -errno, "%s: close failed: %s", w->final, strerror(errno));
	w->fd = -1;
	return rc;
}

static void w_free(wfile *w)
{
	if (w->fd >= 0) {
		close(w->fd);
		unlink(w->tmp);
	}
	free(w->tmp);
	free(w->final);
}

/* Error of the chosen format over rows [row0, row0 + rows) of a matrix of
 * total_rows rows, and of the alternative format (symmetric int4 for int4,
 * affine int4 for int8 embed/lm_head) over an even sample of <= 256 of the
 * matrix's rows. `q` holds those rows quantized as qtype (NULL for f32). */
static void convert_measure(int cls, int qtype, const float *src, const void *q, int row0, int rows,
			    int total_rows, int cols, convert_err_acc *acc)
{
	size_t rb = coli_qtype_row_bytes(qtype, cols);
	float *row = malloc((size_t)cols * sizeof *row);
	void *alt = malloc(coli_qtype_row_bytes(COLI_Q_INT4, cols) + 64);
	int alt_kind = 0; /* 1: symmetric int4, 2: affine int4 */
	if (qtype == COLI_Q_INT4)
		alt_kind = 1;
	else if (qtype == COLI_Q_INT8 && (cls == CONVERT_CLS_EMBED || cls == CONVERT_CLS_LM_HEAD))
		alt_kind = 2;
	if (cols % COLI_QK)
		alt_kind = 0;
	if (!row || !alt)
		goto out;
	/* Alternatives are measured on an even sample of <= 256 rows. */
	int stride = total_rows > 256 ? total_rows / 256 : 1;
	for (int r = 0; r < rows; r++) {
		const float *x = src + (size_t)r * (size_t)cols;
		double sse = 0, ssv = 0;
		if (qtype != COLI_Q_F32)
			coli_dequantize_rows(qtype, (const char *)q + (size_t)r * rb, 1, cols, row);
		for (int j = 0; j < cols; j++) {
			double v = x[j];
			ssv += v * v;
			if (qtype != COLI_Q_F32) {
				double e = v - (double)row[j];
				sse += e * e;
			}
		}
		acc->sse += sse;
		acc->ssv += ssv;
		acc->n += cols;
		if (alt_kind && (row0 + r) % stride == 0) {
			double a = 0;
			if (alt_kind == 1) {
				/* quant.c's symmetric grid, same storage cost (quant.h). */
				double rr = coli_quant_rel_rms_int4_symmetric(x, 1, cols);
				a = rr > 0 ? rr * rr * ssv : 0;
			} else {
				coli_quantize_rows(COLI_Q_INT4, x, 1, cols, alt);
				coli_dequantize_rows(COLI_Q_INT4, alt, 1, cols, row);
				for (int j = 0; j < cols; j++) {
					double e = (double)x[j] - (double)row[j];
					a += e * e;
				}
			}
			acc->sse_alt += a;
			acc->ssv_alt += ssv;
		}
	}
out:
	free(row);
	free(alt);
}

/* Quantize + measure one matrix in chunks of CHUNK_ROWS rows across the
 * pool. Each chunk has its own error accumulator, summed in chunk order, so
 * the published figures do not depend on the thread count. */
#define CHUNK_ROWS 64

typedef struct qjob {
	int cls, qtype, rows, cols;
	const float *x;
	void *q;                 /* NULL: f32, nothing to quantize */
	size_t row_bytes;
	convert_err_acc *acc;    /* [n_chunks] */
	int *rc;                 /* [n_chunks] */
} qjob;

static void qjob_chunk(void *arg, int i)
{
	const qjob *j = arg;
	int r0 = i * CHUNK_ROWS, n = j->rows - r0 < CHUNK_ROWS ? j->rows - r0 : CHUNK_ROWS;
	const float *x = j->x + (size_t)r0 * (size_t)j->cols;
	void *q = j->q ? (char *)j->q + (size_t)r0 * j->row_bytes : NULL;
	if (q && (j->rc[i] = coli_quantize_rows(j->qtype, x, n, j->cols, q)) < 0)
		return;
	convert_measure(j->cls, j->qtype, x, q, r0, n, j->rows, j->cols, &j->acc[i]);
}

static int quantize_matrix(coli_pool *pool, int cls, int qtype, const float *x, int rows,
			   int cols, void *q, convert_err_acc *acc, const char *name, coli_err *err)
{
	int n = (rows + CHUNK_ROWS - 1) / CHUNK_ROWS, rc = 0;
	qjob j = { cls, qtype, rows, cols, x, qtype == COLI_Q_F32 ? NULL : q,
		   coli_qtype_row_bytes(qtype, cols), calloc((size_t)n, sizeof *j.acc),
		   calloc((size_t)n, sizeof *j.rc) };
	if (!j.acc || !j.rc) {
		rc = coli_err_set(err, -ENOMEM, "%s: out of memory", name);
		goto out;
	}
	if (pool)
		coli_pool_run(pool, n, qjob_chunk, &j);
	else
		for (int i = 0; i < n; i++)
			qjob_chunk(&j, i);
	for (int i = 0; i < n; i++) {
		if (j.rc[i] < 0) {
			rc = coli_err_set(err, j.rc[i], "%s: quantization failed", name);
			goto out;
		}
		acc->sse += j.acc[i].sse;
		acc->ssv += j.acc[i].ssv;
		acc->sse_alt += j.acc[i].sse_alt;
		acc->ssv_alt += j.acc[i].ssv_alt;
		acc->n += j.acc[i].n;
	}
	if (qtype == COLI_Q_F32 && q != x)
		memcpy(q, x, (size_t)rows * (size_t)cols * sizeof *x);
out:
	free(j.acc);
	free(j.rc);
	return rc;
}

static int write_tensors(const convert_plan *p, convert_file *f, wfile *w, coli_pool *pool,
			 coli_err *err)
{
	int rc = 0;
	for (int i = 0; i < f->n_t && rc == 0; i++) {
		convert_tensor *t = &f->t[i];
		size_t n = (size_t)t->rows * (size_t)t->cols;
		float *x = malloc(n * sizeof *x);
		void *q = t->qtype == COLI_Q_F32 ? (void *)x : malloc(t->nbytes);
		if (!x || !q)
			rc = coli_err_set(err, -ENOMEM, "%s: out of memory (%zu elements)",
					  t->src->name, n);
		if (rc == 0)
			rc = st_read_f32(p->ck, t->src, x, err);
		if (rc == 0)
			rc = quantize_matrix(pool, t->cls, t->qtype, x, t->rows, t->cols, q,
					     &f->err[t->cls], t->src->name, err);
		if (rc == 0)
			rc = w_pad_to(w, t->offset, err);
		if (rc == 0) {
			t->crc32c = crc32c_update(0, q, t->nbytes);
			rc = w_write(w, q, t->nbytes, err);
		}
		if (q != x)
			free(q);
		free(x);
	}
	return rc;
}

static int write_experts(const convert_plan *p, convert_file *f, wfile *w, coli_pool *pool,
			 coli_err *err)
{
	int rc = 0;
	const int E = p->cfg.n_routed_experts;
	float *x = malloc((size_t)p->cfg.hidden_size * (size_t)p->cfg.moe_intermediate_size *
			  sizeof *x);
	unsigned char *rec = aligned_alloc(4096, p->record_size);
	if (!f->rec_crc)
		f->rec_crc = calloc((size_t)E + 1, sizeof *f->rec_crc);
	if (!x || !rec || !f->rec_crc) {
		rc = coli_err_set(err, -ENOMEM, "%s: out of memory", f->path);
		goto out;
	}
	for (int e = 0; e < E && rc == 0; e++) {
		memset(rec, 0, p->record_size);
		for (int k = 0; k < 3 && rc == 0; k++) {
			const st_tensor *t = f->experts[e * 3 + k];
			if ((rc = st_read_f32(p->ck, t, x, err)) < 0)
				break;
			rc = quantize_matrix(pool, CONVERT_CLS_EXPERTS, p->expert_qtype, x,
					     p->part_rows[k], p->part_cols[k], rec + p->part_off[k],
					     &f->err[CONVERT_CLS_EXPERTS], t->name, err);
		}
		if (rc == 0) {
			f->rec_crc[e] = crc32c_update(0, rec, p->record_size);
			rc = w_write(w, rec, p->record_size, err);
		}
	}
out:
	free(x);
	free(rec);
	return rc;
}

static int copy_file(convert_file *f, wfile *w, coli_err *err)
{
	int rc = 0;
	char *buf = malloc(1 << 20);
	int fd = open(f->copy_src, O_RDONLY | O_CLOEXEC);
	if (!buf || fd < 0) {
		rc = buf ? coli_err_set(err, -errno, "%s: %s", f->copy_src, strerror(errno))
			 : coli_err_set(err, -ENOMEM, "out of memory");
		goto out;
	}
	for (;;) {
		ssize_t r = read(fd, buf, 1 << 20);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = coli_err_set(err, -errno, "%s: read failed: %s", f->copy_src,
					  strerror(errno));
			break;
		}
		if (r == 0)
			break;
		if ((rc = w_write(w, buf, (size_t)r, err)) < 0)
			break;
	}
out:
	if (fd >= 0)
		close(fd);
	free(buf);
	return rc;
}

int convert_file_write(const convert_plan *p, convert_file *f, const char *out_dir,
		       coli_pool *pool, uint64_t *written, coli_err *err)
{
	wfile w;
	memset(f->err, 0, sizeof f->err);
	int rc = w_open(&w, out_dir, f->path, err);
	if (rc == 0) {
		if (f->kind == CONVERT_FILE_TENSORS)
			rc = write_tensors(p, f, &w, pool, err);
		else if (f->kind == CONVERT_FILE_EXPERTS)
			rc = write_experts(p, f, &w, pool, err);
		else
			rc = copy_file(f, &w, err);
	}
	if (rc == 0 && f->kind != CONVERT_FILE_COPY && w.off != f->size)
		rc = coli_err_set(err, -EIO, "%s: wrote %llu bytes, planned %llu (internal error)",
				  f->path, (unsigned long long)w.off, (unsigned long long)f->size);
	if (f->kind == CONVERT_FILE_COPY)
		f->size = w.off;
	if (rc == 0)
		rc = w_finish(&w, err);
	if (rc == 0) {
		uint8_t d[COLI_SHA256_DIGEST];
		coli_sha256_final(&w.sha, d);
		coli_sha256_to_hex(d, f->sha256);
		*written += w.off;
	}
	w_free(&w);
	return rc;
}

/* The segment holding byte `off` of f: a tensor, a record, or none (-1,
 * padding and copied files), scanning forward from *seg (segments are in
 * file order). */
static int segment_at(const convert_plan *p, const convert_file *f, uint64_t off, int *seg)
{
	if (f->kind == CONVERT_FILE_EXPERTS)
		return (int)(off / p->record_size);
	while (*seg < f->n_t && off >= f->t[*seg].offset + f->t[*seg].nbytes)
		(*seg)++;
	return *seg < f->n_t && off >= f->t[*seg].offset ? *seg : -1;
}

int convert_file_digest(const convert_plan *p, convert_file *f, const char *path, char sha256[65],
			coli_err *err)
{
	const size_t chunk = 1u << 20;
	int rc = 0, seg = 0;
	uint64_t off = 0;
	coli_sha256 sha;
	unsigned char *buf = malloc(chunk);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (f->kind == CONVERT_FILE_EXPERTS && !f->rec_crc)
		f->rec_crc = calloc((size_t)p->cfg.n_routed_experts + 1, sizeof *f->rec_crc);
	if (!buf || fd < 0 || (f->kind == CONVERT_FILE_EXPERTS && !f->rec_crc)) {
		rc = fd < 0 ? coli_err_set(err, -errno, "%s: %s", path, strerror(errno))
			    : coli_err_set(err, -ENOMEM, "out of memory");
		goto out;
	}
	for (int i = 0; i < f->n_t; i++)
		f->t[i].crc32c = 0;
	if (f->rec_crc)
		memset(f->rec_crc, 0, (size_t)p->cfg.n_routed_experts * sizeof *f->rec_crc);
	coli_sha256_init(&sha);
	for (;;) {
		ssize_t r = read(fd, buf, chunk);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = coli_err_set(err, -errno, "%s: read failed: %s", path, strerror(errno));
			goto out;
		}
		if (r == 0)
			break;
		coli_sha256_update(&sha, buf, (size_t)r);
		/* feed each piece of the chunk to the CRC of its segment */
		for (size_t i = 0; i < (size_t)r && f->kind != CONVERT_FILE_COPY;) {
			int s = segment_at(p, f, off + i, &seg);
			uint64_t end;
			if (f->kind == CONVERT_FILE_EXPERTS)
				end = ((uint64_t)s + 1) * p->record_size;
			else
				end = s >= 0 ? f->t[s].offset + f->t[s].nbytes
					     : seg < f->n_t ? f->t[seg].offset : UINT64_MAX;
			size_t n = end - (off + i) < (uint64_t)r - i ? (size_t)(end - (off + i)) : (size_t)r - i;
			if (s >= 0 && f->kind == CONVERT_FILE_EXPERTS && s < p->cfg.n_routed_experts)
				f->rec_crc[s] = crc32c_update(f->rec_crc[s], buf + i, n);
			else if (s >= 0 && f->kind == CONVERT_FILE_TENSORS)
				f->t[s].crc32c = crc32c_update(f->t[s].crc32c, buf + i, n);
			i += n;
		}
		off += (uint64_t)r;
	}
	uint8_t d[COLI_SHA256_DIGEST];
	coli_sha256_final(&sha, d);
	coli_sha256_to_hex(d, sha256);
out:
	if (fd >= 0)
		close(fd);
	free(buf);
	return rc;
}
