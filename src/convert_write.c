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

#include "manifest.h"
#include "quant.h"
#include "sha256.h"

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

static int w_write(wfile *w, const void *data, size_t n, coli_err *err)
{
	const char *p = data;
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
	int rc = 0;
	if (fsync(w->fd) < 0)
		rc = coli_err_set(err, -errno, "%s: fsync failed: %s", w->tmp, strerror(errno));
	if (close(w->fd) < 0 && rc == 0)
		rc = coli_err_set(err, -errno, "%s: close failed: %s", w->tmp, strerror(errno));
	w->fd = -1;
	if (rc == 0 && rename(w->tmp, w->final) < 0)
		rc = coli_err_set(err, -errno, "%s: rename failed: %s", w->final, strerror(errno));
	if (rc == 0)
		rc = manifest_fsync_dir(w->final, err);
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

void convert_measure(int cls, int qtype, const float *src, const void *q, int rows, int cols,
		     convert_err_acc *acc)
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
	int stride = rows > 256 ? rows / 256 : 1;
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
		if (alt_kind && r % stride == 0) {
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

static int write_tensors(const convert_plan *p, convert_file *f, wfile *w, coli_err *err)
{
	int rc = 0;
	for (int i = 0; i < f->n_t && rc == 0; i++) {
		const convert_tensor *t = &f->t[i];
		size_t n = (size_t)t->rows * (size_t)t->cols;
		float *x = malloc(n * sizeof *x);
		void *q = t->qtype == COLI_Q_F32 ? NULL : malloc(t->nbytes);
		if (!x || (t->qtype != COLI_Q_F32 && !q)) {
			rc = coli_err_set(err, -ENOMEM, "%s: out of memory (%zu elements)",
					  t->src->name, n);
		} else if ((rc = st_read_f32(p->ck, t->src, x, err)) == 0) {
			if (q)
				rc = coli_quantize_rows(t->qtype, x, t->rows, t->cols, q);
			if (rc < 0)
				rc = coli_err_set(err, rc, "%s: quantization failed", t->src->name);
		}
		if (rc == 0) {
			convert_measure(t->cls, t->qtype, x, q, t->rows, t->cols, &f->err[t->cls]);
			rc = w_pad_to(w, t->offset, err);
		}
		if (rc == 0)
			rc = w_write(w, q ? q : (void *)x, t->nbytes, err);
		free(x);
		free(q);
	}
	return rc;
}

static int write_experts(const convert_plan *p, convert_file *f, wfile *w, coli_err *err)
{
	int rc = 0;
	const int E = p->cfg.n_routed_experts;
	float *x = malloc((size_t)p->cfg.hidden_size * (size_t)p->cfg.moe_intermediate_size *
			  sizeof *x);
	unsigned char *rec = aligned_alloc(4096, p->record_size);
	if (!x || !rec) {
		rc = coli_err_set(err, -ENOMEM, "%s: out of memory", f->path);
		goto out;
	}
	for (int e = 0; e < E && rc == 0; e++) {
		memset(rec, 0, p->record_size);
		for (int k = 0; k < 3 && rc == 0; k++) {
			const st_tensor *t = f->experts[e * 3 + k];
			int rows = p->part_rows[k], cols = p->part_cols[k];
			void *dst = rec + p->part_off[k];
			if ((rc = st_read_f32(p->ck, t, x, err)) < 0)
				break;
			if (p->expert_qtype == COLI_Q_F32)
				memcpy(dst, x, (size_t)rows * (size_t)cols * sizeof *x);
			else if ((rc = coli_quantize_rows(p->expert_qtype, x, rows, cols, dst)) < 0)
				rc = coli_err_set(err, rc, "%s: quantization failed", t->name);
			if (rc == 0)
				convert_measure(CONVERT_CLS_EXPERTS, p->expert_qtype, x,
						p->expert_qtype == COLI_Q_F32 ? NULL : dst, rows, cols,
						&f->err[CONVERT_CLS_EXPERTS]);
		}
		if (rc == 0)
			rc = w_write(w, rec, p->record_size, err);
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
		       uint64_t *written, coli_err *err)
{
	wfile w;
	memset(f->err, 0, sizeof f->err);
	int rc = w_open(&w, out_dir, f->path, err);
	if (rc == 0) {
		if (f->kind == CONVERT_FILE_TENSORS)
			rc = write_tensors(p, f, &w, err);
		else if (f->kind == CONVERT_FILE_EXPERTS)
			rc = write_experts(p, f, &w, err);
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
