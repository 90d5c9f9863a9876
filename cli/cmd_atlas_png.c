/* cmd_atlas_png.c - `coli atlas png`: the heatmap, written with libpng.
 *
 * Layout (coli-atlas(1)): an 8-bit grayscale, non-interlaced image; one
 * row of cells per layer that has routings (dense layers and empty ones
 * are left out, the rest top to bottom in layer order), one column of
 * cells per expert, each layer's experts ordered by (cluster, id); every
 * cell is SCALE x SCALE pixels of value round(255 * v / max), v the
 * cell's count (or heat) and max the largest of the image: black never
 * chosen, white the most chosen. */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <png.h>

#include "cmd_atlas.h"

struct png_job {
	const atlas_grid *g;
	const int *cluster;
	int scale, rows;
	double vmax;
	size_t w;
	png_bytep line;
	int *order;
	FILE *f;
};

/* libpng's errors longjmp here: 0 or -EIO. Nothing this function changes
 * after setjmp is read after the jump. */
static int png_emit(const struct png_job *j)
{
	const int L = j->g->n_layers, E = j->g->n_experts;
	png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
	png_infop info = png ? png_create_info_struct(png) : NULL;
	if (!png || !info) {
		png_destroy_write_struct(&png, NULL);
		return -ENOMEM;
	}
	if (setjmp(png_jmpbuf(png))) {
		png_destroy_write_struct(&png, &info);
		return -EIO;
	}
	png_init_io(png, j->f);
	png_set_IHDR(png, info, (png_uint_32)j->w, (png_uint_32)(j->rows * j->scale), 8, PNG_COLOR_TYPE_GRAY,
		     PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
	png_write_info(png, info);
	for (int l = 0; l < L; l++) {
		if (atlas_layer_total(j->g, l) <= 0)
			continue;
		atlas_cluster_order(j->cluster, E, l, j->order);
		for (int x = 0; x < E; x++) {
			const double v = j->g->v[(size_t)l * E + j->order[x]];
			memset(j->line + (size_t)x * j->scale, (int)lround(j->vmax > 0 ? 255.0 * v / j->vmax : 0),
			       (size_t)j->scale);
		}
		for (int y = 0; y < j->scale; y++)
			png_write_row(png, j->line);
	}
	png_write_end(png, NULL);
	png_destroy_write_struct(&png, &info);
	return 0;
}

int atlas_png(const char *path, const atlas_grid *g, const int *cluster, int scale, coli_err *err)
{
	const int L = g->n_layers, E = g->n_experts;
	struct png_job j = { .g = g, .cluster = cluster, .scale = scale };
	for (int l = 0; l < L; l++) {
		if (atlas_layer_total(g, l) <= 0)
			continue;
		j.rows++;
		for (int e = 0; e < E; e++)
			if (g->v[(size_t)l * E + e] > j.vmax)
				j.vmax = g->v[(size_t)l * E + e];
	}
	if (!j.rows)
		return coli_err_set(err, -EINVAL, "%s has no routings to draw", g->name);
	j.w = (size_t)E * (size_t)scale;
	if (j.w > 1u << 20 || (size_t)j.rows * (size_t)scale > 1u << 20)
		return coli_err_set(err, -EINVAL, "a %zu x %d pixel image is too large: lower --scale", j.w,
				    j.rows * scale);
	j.line = malloc(j.w);
	j.order = malloc(sizeof(int) * (size_t)E);
	int rc = 0;
	if (!j.line || !j.order)
		rc = coli_err_set(err, -ENOMEM, "%s: out of memory", path);
	else if (!(j.f = fopen(path, "wb")))
		rc = coli_err_set(err, -errno, "%s: %s", path, strerror(errno));
	else if ((rc = png_emit(&j)))
		coli_err_set(err, rc, "%s: %s", path, rc == -ENOMEM ? "out of memory" : "cannot write the PNG");
	if (j.f && fclose(j.f) && !rc)
		rc = coli_err_set(err, -errno, "%s: %s", path, strerror(errno));
	if (rc && j.f)
		remove(path);
	free(j.line);
	free(j.order);
	return rc;
}
