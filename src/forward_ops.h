/* forward_ops.h - small vector operations shared by the forward pass. */
#ifndef COLI_FORWARD_OPS_H
#define COLI_FORWARD_OPS_H

#include <math.h>
#include <time.h>

#include "quant.h"
#include "util_time.h"

/* out = x / rms(x) * w, accumulated in double. */
static inline void fwd_rmsnorm(float *out, const float *x, const float *w, int n, float eps)
{
	double ss = 0.0;
	for (int i = 0; i < n; i++)
		ss += (double)x[i] * x[i];
	float r = (float)(1.0 / sqrt(ss / n + eps));
	for (int i = 0; i < n; i++)
		out[i] = x[i] * r * w[i];
}

static inline float fwd_silu(float x)
{
	return x / (1.0f + expf(-x));
}

/* a[i] = silu(a[i]) * b[i] */
static inline void fwd_swiglu(float *a, const float *b, int n)
{
	for (int i = 0; i < n; i++)
		a[i] = fwd_silu(a[i]) * b[i];
}

/* A view of rows [row0, row0+n) of a matrix. */
static inline coli_qmat fwd_rows(const coli_qmat *w, int row0, int n)
{
	coli_qmat v = *w;
	v.rows = n;
	v.data = (const char *)w->data + (size_t)row0 * coli_qtype_row_bytes(w->qtype, w->cols);
	return v;
}

/* Rotate pairs by pos * inv_freq[i]; cos and sin are scaled by mscale
 * (YaRN). interleave: pairs (x[2i], x[2i+1]) - equal to DeepSeek-V3's
 * de-interleave + rotate_half up to a fixed permutation of the rope dims,
 * applied alike to q and k, so every dot product is the same; otherwise
 * NeoX split halves (x[i], x[i + dim/2]). */
static inline void fwd_rope(float *x, int dim, int pos, const float *inv_freq, float mscale,
			    int interleave)
{
	const int half = dim / 2;
	for (int i = 0; i < half; i++) {
		double a = (double)pos * inv_freq[i];
		float c = (float)cos(a) * mscale, s = (float)sin(a) * mscale;
		float *p0 = interleave ? &x[2 * i] : &x[i];
		float *p1 = interleave ? &x[2 * i + 1] : &x[i + half];
		float x0 = *p0, x1 = *p1;
		*p0 = x0 * c - x1 * s;
		*p1 = x1 * c + x0 * s;
	}
}

#endif
