/* cmd_atlas.h - what the files of `coli atlas` share: the options, the
 * loading of profiles and heat (cmd_atlas.c), the reports
 * (cmd_atlas_out.c) and the heatmap (cmd_atlas_png.c). */
#ifndef COLI_CMD_ATLAS_H
#define COLI_CMD_ATLAS_H

#include "engine_atlas.h"
#include "coli_err.h"

enum atlas_fmt { ATLAS_TEXT = 0, ATLAS_JSON, ATLAS_CSV };

typedef struct atlas_opts {
	const char *cache_dir;     /* resolved */
	int fmt;                   /* enum atlas_fmt */
	int top;                   /* --top N */
	int clusters;              /* --clusters K */
	int scale;                 /* --scale S (png) */
	int heat_k;                /* experts per token for heat's concentration
	                            * (from the _all profile; 0 unknown) */
} atlas_opts;

/* WHICH -> a grid: "--heat" (CACHE_DIR/hot-experts/heat.bin), a path (with
 * a '/' or ending in .prof), session:NAME (CACHE_DIR/kv/NAME.prof) or a
 * label (CACHE_DIR/profiles/LABEL.prof, _all included). */
int atlas_load(const atlas_opts *o, const char *which, atlas_grid *g, coli_err *err);
/* The labels in CACHE_DIR/profiles but _all, sorted; *names malloc'd
 * (free each and the array). */
int atlas_labels(const atlas_opts *o, char ***names, int *n, coli_err *err);

/* cmd_atlas_out.c: the reports on stdout; 0, or an exit status */
int atlas_show(const atlas_opts *o, const atlas_grid *g);
int atlas_compare_out(const atlas_opts *o, const atlas_grid *a, const atlas_grid *b);
int atlas_cluster_out(const atlas_opts *o, const atlas_grid *const *g, int n);
/* The clustering every report and the heatmap use (cluster: L * E). */
int atlas_clusters_of(const atlas_opts *o, const atlas_grid *const *g, int n, int *cluster, int *favour);

/* cmd_atlas_png.c: the heatmap of g with columns in cluster order. */
int atlas_png(const char *path, const atlas_grid *g, const int *cluster, int scale, coli_err *err);

#endif
