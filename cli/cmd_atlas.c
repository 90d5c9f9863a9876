/* cmd_atlas.c - `coli atlas`: which experts a workload uses, from the
 * routing profiles the engine saves (engine_profile.h) and the learned
 * heat (heat.bin): shown, compared, clustered, drawn.
 *
 * This file parses the options, finds the cache directory the engine
 * would use, loads profiles and heat into grids and dispatches; the
 * arithmetic is in src/engine_atlas.c, the reports in cmd_atlas_out.c, the
 * PNG in cmd_atlas_png.c. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cmd_atlas.h"
#include "cmd_atlas_mirror.h"
#include "engine_profile.h"
#include "expert_store.h"
#include "kv_cache_dir.h"
#include "model_dir.h"
#include "util_array.h"

#define CMD "atlas"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: coli atlas show [WHICH] [options]       per layer: top experts, concentration, entropy\n"
		"       coli atlas compare A B [options]        the experts most specific to A and to B\n"
		"       coli atlas cluster [WHICH...] [options] experts grouped by co-activation across workloads\n"
		"       coli atlas png OUT.png [WHICH] [options] heatmap layer x expert, in cluster order\n"
		"       coli atlas list [options]               the labels with a profile\n"
		"       coli atlas --plan-mirror SIZE [options] which records a partial mirror of SIZE holds\n"
		"                   (its options: coli atlas --plan-mirror --help, coli-atlas(1))\n"
		"  WHICH            a label (CACHE_DIR/profiles/LABEL.prof; default _all, every request),\n"
		"                   session:NAME (a session's profile), a .prof path, or --heat (the\n"
		"                   learned routing heat, CACHE_DIR/hot-experts/heat.bin)\n"
		"  --model DIR      the model whose cache directory to read (default $COLI_MODEL, then\n"
		"                   the default model)\n"
		"  --cache-dir DIR  the cache directory itself (default $COLI_CACHE_DIR, else the model's)\n"
		"  --top N          experts per layer (show) or per side (compare); default 8\n"
		"  --clusters K     clusters (cluster, png); default 8\n"
		"  --scale S        pixels per cell (png); default 8\n"
		"  --json, --csv    machine-readable output\n");
}

static int path_of(const atlas_opts *o, const char *dir, const char *name, const char *ext, char *out, size_t cap,
		   coli_err *err)
{
	if ((size_t)snprintf(out, cap, "%s/%s%s%s", o->cache_dir, dir, name, ext) >= cap)
		return coli_err_set(err, -ENAMETOOLONG, "%s: name too long", name);
	return 0;
}

static int load_heat(const atlas_opts *o, atlas_grid *g, coli_err *err)
{
	char path[PATH_MAX];
	int rc = path_of(o, "hot-experts/", "heat", ".bin", path, sizeof path, err);
	float *h = NULL;
	uint64_t tokens = 0;
	if (rc || (rc = expert_store_heat_read(path, &g->n_layers, &g->n_experts, &h, &tokens, g->fingerprint, err)))
		return rc;
	const size_t n = (size_t)g->n_layers * (size_t)g->n_experts;
	if (!(g->v = malloc(sizeof(double) * n))) {
		free(h);
		return coli_err_set(err, -ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < n; i++)
		g->v[i] = h[i];
	free(h);
	g->is_heat = 1;
	g->top_k = 0;
	snprintf(g->name, sizeof g->name, "heat");
	return 0;
}

int atlas_load(const atlas_opts *o, const char *which, atlas_grid *g, coli_err *err)
{
	memset(g, 0, sizeof *g);
	if (!strcmp(which, "--heat"))
		return load_heat(o, g, err);
	char path[PATH_MAX];
	const size_t n = strlen(which);
	int rc = 0;
	if (strchr(which, '/') || (n > 5 && !strcmp(which + n - 5, ".prof")))
		rc = (size_t)snprintf(path, sizeof path, "%s", which) >= sizeof path
			     ? coli_err_set(err, -ENAMETOOLONG, "%s: path too long", which) : 0;
	else if (!strncmp(which, "session:", 8))
		rc = path_of(o, "kv/", which + 8, ".prof", path, sizeof path, err);
	else if (!strcmp(which, COLI_PROFILE_ALL) || coli_profile_label_valid(which))
		rc = path_of(o, "profiles/", which, ".prof", path, sizeof path, err);
	else
		rc = coli_err_set(err, -EINVAL, "'%s' is neither a label, session:NAME, a .prof path nor --heat",
				  which);
	if (rc)
		return rc;
	coli_profile p;
	if ((rc = coli_profile_read(path, &p, err))) {
		if (rc == -ENOENT)
			coli_err_set(err, rc, "no profile %s (%s): nothing was recorded under that name", which, path);
		return rc;
	}
	rc = atlas_grid_from_profile(&p, which, g, err);
	coli_profile_free(&p);
	return rc;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int atlas_labels(const atlas_opts *o, char ***names, int *n, coli_err *err)
{
	char dir[PATH_MAX];
	*names = NULL;
	*n = 0;
	int rc = path_of(o, "profiles", "", "", dir, sizeof dir, err);
	if (rc)
		return rc;
	DIR *d = opendir(dir);
	if (!d)
		return errno == ENOENT ? 0 : coli_err_set(err, -errno, "%s: %s", dir, strerror(errno));
	struct dirent *de;
	int cap = 0;
	while ((de = readdir(d))) {
		const size_t len = strlen(de->d_name);
		if (len <= 5 || strcmp(de->d_name + len - 5, ".prof"))
			continue;
		char lab[COLI_PROFILE_LABEL_MAX + 8];
		snprintf(lab, sizeof lab, "%.*s", (int)(len - 5), de->d_name);
		if (!coli_profile_label_valid(lab))
			continue; /* _all and temporary files */
		if (util_array_grow(names, &cap, *n + 1, 16)) {
			rc = coli_err_set(err, -ENOMEM, "out of memory");
			break;
		}
		if (!((*names)[*n] = strdup(lab))) {
			rc = coli_err_set(err, -ENOMEM, "out of memory");
			break;
		}
		(*n)++;
	}
	closedir(d);
	if (*n)
		qsort(*names, (size_t)*n, sizeof **names, name_cmp);
	return rc;
}

static void labels_free(char **names, int n)
{
	for (int i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

/* The grids named (or every label when none is), same shape and model. */
static int load_many(const atlas_opts *o, const char *const *which, int n, atlas_grid *g, int *got, coli_err *err)
{
	char **labels = NULL;
	int nl = 0, rc = 0;
	*got = 0;
	if (!n) {
		if ((rc = atlas_labels(o, &labels, &nl, err)))
			return rc;
		which = (const char *const *)labels;
		n = nl;
		if (n < 1) {
			labels_free(labels, nl);
			return coli_err_set(err, -ENOENT, "no labelled profiles in %s/profiles", o->cache_dir);
		}
	}
	if (n > 64)
		n = 64;
	for (int i = 0; i < n && !rc; i++) {
		if ((rc = atlas_load(o, which[i], &g[i], err)))
			break;
		(*got)++;
		if (g[i].n_layers != g[0].n_layers || g[i].n_experts != g[0].n_experts ||
		    strcmp(g[i].fingerprint, g[0].fingerprint))
			rc = coli_err_set(err, -EINVAL, "%s and %s are of different models", g[0].name, g[i].name);
	}
	labels_free(labels, nl);
	return rc;
}

static int parse_int(const char *flag, const char *v, int lo, int hi, int *out)
{
	char *end;
	long x = v ? strtol(v, &end, 10) : 0;
	if (!v || !*v || *end || x < lo || x > hi) {
		cli_errorf(CMD, "%s needs a number from %d to %d", flag, lo, hi);
		return -1;
	}
	*out = (int)x;
	return 0;
}

int cmd_atlas(int argc, char **argv)
{
	atlas_opts o = { .top = 8, .clusters = 8, .scale = 8 };
	const char *pos[66], *model_arg = NULL, *cache_opt = NULL;
	int npos = 0, status = COLI_EXIT_FAIL;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			return COLI_EXIT_OK;
		} else if (!strcmp(a, "--plan-mirror")) {
			/* a mode of its own: it takes the whole argument list */
			return cmd_atlas_plan_mirror(argc, argv);
		} else if (!strcmp(a, "--json") || !strcmp(a, "--csv")) {
			o.fmt = a[2] == 'j' ? ATLAS_JSON : ATLAS_CSV;
		} else if (!strcmp(a, "--model") || !strcmp(a, "--cache-dir")) {
			if (!v || !*v) {
				cli_errorf(CMD, "%s needs a directory", a);
				return COLI_EXIT_USAGE;
			}
			*(a[2] == 'm' ? &model_arg : &cache_opt) = argv[++i];
		} else if (!strcmp(a, "--top") || !strcmp(a, "--clusters") || !strcmp(a, "--scale")) {
			int *dst = a[2] == 't' ? &o.top : a[3] == 'l' ? &o.clusters : &o.scale;
			if (parse_int(a, v, 1, a[2] == 't' ? 65536 : 64, dst))
				return COLI_EXIT_USAGE;
			i++;
		} else if (!strcmp(a, "--heat") && npos < 66) {
			pos[npos++] = a;
		} else if (a[0] == '-' && a[1]) {
			cli_errorf(CMD, "unknown option '%s' (see --help)", a);
			return COLI_EXIT_USAGE;
		} else if (npos < 66) {
			pos[npos++] = a;
		} else {
			cli_errorf(CMD, "too many arguments");
			return COLI_EXIT_USAGE;
		}
	}
	const char *sub = npos ? pos[0] : NULL;
	const int nargs = npos - 1;
	if (!sub || (strcmp(sub, "show") && strcmp(sub, "compare") && strcmp(sub, "cluster") &&
		     strcmp(sub, "png") && strcmp(sub, "list"))) {
		if (sub)
			cli_errorf(CMD, "unknown subcommand '%s'", sub);
		usage(stderr);
		return COLI_EXIT_USAGE;
	}
	if ((!strcmp(sub, "show") && nargs > 1) || (!strcmp(sub, "compare") && nargs != 2) ||
	    (!strcmp(sub, "png") && (nargs < 1 || nargs > 2)) || (!strcmp(sub, "list") && nargs)) {
		cli_errorf(CMD, "%s: wrong number of arguments (see --help)", sub);
		return COLI_EXIT_USAGE;
	}
	char cache[PATH_MAX], model_buf[PATH_MAX];
	coli_err err = { 0 };
	if (cache_opt) {
		snprintf(cache, sizeof cache, "%s", cache_opt);
	} else {
		const char *env = getenv("COLI_CACHE_DIR");
		const char *model = NULL;
		if (!(env && *env)) {
			if (coli_model_dir_resolve(model_arg, model_buf, sizeof model_buf, &err)) {
				cli_errorf(CMD, "%s", err.msg);
				return COLI_EXIT_FAIL;
			}
			model = model_buf;
		}
		if (kv_cache_dir(model, cache, sizeof cache, &err) < 0) {
			cli_errorf(CMD, "%s", err.msg);
			return COLI_EXIT_FAIL;
		}
	}
	o.cache_dir = cache;
	atlas_grid g[64];
	int ng = 0;
	memset(g, 0, sizeof g);
	if (!strcmp(sub, "list")) {
		char **names;
		int n;
		if (atlas_labels(&o, &names, &n, &err))
			goto fail;
		for (int i = 0; i < n; i++) {
			if (!atlas_load(&o, names[i], &g[0], &err)) {
				printf("%s\t%.0f tokens\t%.0f requests\n", names[i], g[0].tokens, g[0].requests);
				atlas_grid_free(&g[0]);
			}
			free(names[i]);
		}
		free(names);
		return COLI_EXIT_OK;
	}
	if (!strcmp(sub, "show")) {
		if (atlas_load(&o, nargs ? pos[1] : COLI_PROFILE_ALL, &g[0], &err))
			goto fail;
		ng = 1;
		if (g[0].is_heat && !atlas_load(&o, COLI_PROFILE_ALL, &g[1], &err)) {
			o.heat_k = g[1].top_k; /* heat files do not say the model's top-k */
			atlas_grid_free(&g[1]);
		}
		coli_err_clear(&err);
		status = atlas_show(&o, &g[0]);
	} else if (!strcmp(sub, "compare")) {
		if (load_many(&o, pos + 1, 2, g, &ng, &err))
			goto fail;
		status = atlas_compare_out(&o, &g[0], &g[1]);
	} else if (!strcmp(sub, "cluster")) {
		if (load_many(&o, pos + 1, nargs, g, &ng, &err))
			goto fail;
		const atlas_grid *gp[64];
		for (int i = 0; i < ng; i++)
			gp[i] = &g[i];
		status = atlas_cluster_out(&o, gp, ng);
	} else {
		/* png: the profile drawn, its columns in the clustering of
		 * every label (or of itself when there are none) */
		if (atlas_load(&o, nargs == 2 ? pos[2] : COLI_PROFILE_ALL, &g[0], &err))
			goto fail;
		ng = 1;
		int nl = 0, bad = load_many(&o, NULL, 0, g + 1, &nl, &err);
		for (int i = 1; i <= nl; i++)
			bad |= g[i].n_layers != g[0].n_layers || g[i].n_experts != g[0].n_experts;
		if (bad) {
			/* no labels (or of another shape): the profile alone */
			for (int i = 1; i <= nl; i++)
				atlas_grid_free(&g[i]);
			nl = 0;
			coli_err_clear(&err);
		}
		ng += nl;
		const atlas_grid *gp[64];
		for (int i = 0; i < ng; i++)
			gp[i] = &g[i];
		int *cluster = malloc(sizeof(int) * (size_t)g[0].n_layers * (size_t)g[0].n_experts), favour[64];
		if (!cluster || atlas_clusters_of(&o, nl ? gp + 1 : gp, nl ? nl : 1, cluster, favour) < 0) {
			free(cluster);
			coli_err_set(&err, -ENOMEM, "out of memory");
			goto fail;
		}
		int rc = atlas_png(pos[1], &g[0], cluster, o.scale, &err);
		free(cluster);
		if (rc)
			goto fail;
		status = COLI_EXIT_OK;
	}
	for (int i = 0; i < ng; i++)
		atlas_grid_free(&g[i]);
	return status;
fail:
	cli_errorf(CMD, "%s", err.msg);
	for (int i = 0; i < ng; i++)
		atlas_grid_free(&g[i]);
	return COLI_EXIT_FAIL;
}
