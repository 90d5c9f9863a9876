/* tui_atlas.c - see tui_atlas.h. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "engine_profile.h"
#include "tui_atlas.h"

int tui_atlas_init(tui_atlas *t, int n_layers, int n_experts, const char *cache_dir)
{
	memset(t, 0, sizeof *t);
	if (n_layers <= 0 || n_experts <= 0)
		return 0;
	snprintf(t->kv_dir, sizeof t->kv_dir, "%s/kv", cache_dir);
	snprintf(t->prof_dir, sizeof t->prof_dir, "%s/profiles", cache_dir);
	t->spec = calloc((size_t)n_layers * TUI_ATLAS_TOP, sizeof *t->spec);
	t->n_spec = calloc((size_t)n_layers, sizeof *t->n_spec);
	t->hist_order = malloc(sizeof(int) * (size_t)n_layers * (size_t)n_experts);
	t->w_order = malloc(sizeof(int) * (size_t)n_layers * (size_t)n_experts);
	if (!t->spec || !t->n_spec || !t->hist_order || !t->w_order) {
		tui_atlas_free(t);
		return -ENOMEM;
	}
	t->n_layers = n_layers;
	t->n_experts = n_experts;
	snprintf(t->conv_msg, sizeof t->conv_msg, "no routing profile of this conversation yet");
	return 0;
}

void tui_atlas_free(tui_atlas *t)
{
	if (t->running)
		pthread_join(t->th, NULL);
	free(t->spec);
	free(t->n_spec);
	free(t->hist_order);
	free(t->w_order);
	memset(t, 0, sizeof *t);
}

void tui_atlas_pick(const atlas_cmp *c, int n, int n_layers, int top, tui_spec *spec, int *n_spec)
{
	memset(n_spec, 0, sizeof *n_spec * (size_t)n_layers);
	for (int i = 0; i < n; i++) {
		const int l = c[i].layer;
		if (c[i].z <= 0 || l < 0 || l >= n_layers || n_spec[l] >= top)
			continue;
		spec[(size_t)l * top + n_spec[l]++] = (tui_spec){ c[i].expert, c[i].z, c[i].na > 0 ? c[i].a / c[i].na : 0,
								 c[i].nb > 0 ? c[i].b / c[i].nb : 0 };
	}
}

/* (mtime ns, size, inode) of path; (0, -1, 0) when absent. The inode
 * because profiles are replaced by rename: two writes within one tick of
 * the file system's clock have the same mtime and, same shape, the same
 * size, but never the same inode while the old file is still there. */
static void stamp_of(const char *path, long long out[3])
{
	struct stat st;
	if (stat(path, &st)) {
		out[0] = 0;
		out[1] = -1;
		out[2] = 0;
		return;
	}
	out[0] = (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
	out[1] = (long long)st.st_size;
	out[2] = (long long)st.st_ino;
}

/* path -> grid of this model's shape: 0, or -1 with why in msg */
static int load(const tui_atlas *t, const char *path, const char *name, atlas_grid *g, char *msg, size_t cap)
{
	coli_profile p;
	coli_err err = { 0 };
	int rc = coli_profile_read(path, &p, &err);
	if (rc == -ENOENT) {
		snprintf(msg, cap, "no profile %s yet", name);
		return -1;
	}
	if (rc) {
		snprintf(msg, cap, "%s", err.msg);
		return -1;
	}
	if (p.n_layers != t->n_layers || p.n_experts != t->n_experts) {
		snprintf(msg, cap, "%s is of another model (%d x %d experts)", name, p.n_layers, p.n_experts);
		coli_profile_free(&p);
		return -1;
	}
	rc = atlas_grid_from_profile(&p, name, g, &err);
	coli_profile_free(&p);
	if (rc)
		snprintf(msg, cap, "%s", err.msg);
	return rc ? -1 : 0;
}

int tui_atlas_conv_refresh(tui_atlas *t, const char *session)
{
	if (!t->n_layers)
		return 0;
	char path[2][4400];
	long long now[2][3];
	int bad = kv_store_path(t->kv_dir, session, "prof", path[0], sizeof path[0], NULL) < 0;
	snprintf(path[1], sizeof path[1], "%s/%s.prof", t->prof_dir, COLI_PROFILE_ALL);
	for (int i = 0; i < 2; i++)
		stamp_of(path[i], now[i]);
	if (!strcmp(t->session, session) && !memcmp(now, t->stamp, sizeof now))
		return 0;
	memcpy(t->stamp, now, sizeof now);
	snprintf(t->session, sizeof t->session, "%s", session);
	t->conv_ok = 0;
	if (bad) {
		snprintf(t->conv_msg, sizeof t->conv_msg, "session %s has no profile file name", session);
		return 1;
	}
	atlas_grid a, b;
	char name[KV_NAME_MAX + 16];
	snprintf(name, sizeof name, "session:%s", session);
	memset(&b, 0, sizeof b);
	if (load(t, path[0], name, &a, t->conv_msg, sizeof t->conv_msg))
		return 1;
	if (load(t, path[1], COLI_PROFILE_ALL, &b, t->conv_msg, sizeof t->conv_msg)) {
		atlas_grid_free(&a);
		return 1;
	}
	const size_t cells = (size_t)t->n_layers * (size_t)t->n_experts;
	atlas_cmp *c = malloc(sizeof *c * cells);
	if (!c) {
		snprintf(t->conv_msg, sizeof t->conv_msg, "out of memory");
		t->stamp[0][1] = -2; /* try again at the next refresh */
		goto out;
	}
	const int n = atlas_compare(&a, &b, c);
	atlas_cmp_sort(c, n);
	tui_atlas_pick(c, n, t->n_layers, TUI_ATLAS_TOP, t->spec, t->n_spec);
	free(c);
	t->conv_tokens = a.tokens;
	t->base_tokens = b.tokens;
	t->conv_ok = 1;
	t->conv_msg[0] = 0;
out:
	atlas_grid_free(&a);
	atlas_grid_free(&b);
	return 1;
}

static int name_cmp(const void *x, const void *y)
{
	return strcmp(*(char *const *)x, *(char *const *)y);
}

/* The NAME of every DIR/NAME.prof that valid() accepts, sorted, up to
 * room; returns how many (names malloc'd). */
static int list_profiles(const char *dir, int (*valid)(const char *), char **names, int room)
{
	DIR *d = opendir(dir);
	int n = 0;
	if (!d)
		return 0;
	struct dirent *de;
	while ((de = readdir(d)) && n < room) {
		const size_t len = strlen(de->d_name);
		if (len <= 5 || len > 5 + KV_NAME_MAX || strcmp(de->d_name + len - 5, ".prof"))
			continue;
		char nm[KV_NAME_MAX + 1];
		snprintf(nm, sizeof nm, "%.*s", (int)(len - 5), de->d_name);
		if (valid(nm) && (names[n] = strdup(nm)))
			n++;
	}
	closedir(d);
	qsort(names, (size_t)n, sizeof *names, name_cmp);
	return n;
}

static void *hist_main(void *arg)
{
	tui_atlas *t = arg;
	const int L = t->n_layers, E = t->n_experts;
	char *labels[TUI_ATLAS_PROFILES], *sessions[TUI_ATLAS_PROFILES];
	atlas_grid *g = calloc(TUI_ATLAS_PROFILES, sizeof *g);
	const atlas_grid *gp[TUI_ATLAS_PROFILES];
	int favour[TUI_ATLAS_CLUSTERS], *cluster = malloc(sizeof(int) * (size_t)L * (size_t)E);
	const int nl = list_profiles(t->prof_dir, coli_profile_label_valid, labels, TUI_ATLAS_PROFILES);
	const int ns = list_profiles(t->kv_dir, kv_store_name_valid, sessions, TUI_ATLAS_PROFILES - nl);
	int n = 0, n_lab = 0, m = 0;
	char path[4400], name[KV_NAME_MAX + 16], why[600] = "";
	for (int i = 0; g && i < nl + ns; i++) {
		const int lab = i < nl;
		const char *nm = lab ? labels[i] : sessions[i - nl];
		snprintf(path, sizeof path, "%s/%s.prof", lab ? t->prof_dir : t->kv_dir, nm);
		snprintf(name, sizeof name, "%s%s", lab ? "" : "session:", nm);
		if (!load(t, path, name, &g[n], why, sizeof why)) {
			gp[n] = &g[n];
			n++;
			n_lab += lab;
		}
	}
	t->w_profiles = n;
	t->w_clusters = 0;
	if (!cluster || !g)
		snprintf(t->w_msg, sizeof t->w_msg, "out of memory");
	else if (n < 2)
		snprintf(t->w_msg, sizeof t->w_msg,
			 "%d recorded profile(s): the history order needs two (sessions or labels)", n);
	else if ((m = atlas_cluster(gp, n, TUI_ATLAS_CLUSTERS, cluster, favour)) < 0)
		snprintf(t->w_msg, sizeof t->w_msg, "out of memory");
	else {
		for (int l = 0; l < L; l++)
			atlas_cluster_order(cluster, E, l, t->w_order + (size_t)l * E);
		t->w_clusters = m;
		snprintf(t->w_msg, sizeof t->w_msg,
			 "affinity order from %d recorded profiles (%d labels, %d sessions): %d clusters", n, n_lab,
			 n - n_lab, m);
	}
	for (int i = 0; g && i < n; i++)
		atlas_grid_free(&g[i]);
	for (int i = 0; i < nl; i++)
		free(labels[i]);
	for (int i = 0; i < ns; i++)
		free(sessions[i]);
	free(g);
	free(cluster);
	atomic_store_explicit(&t->done, 1, memory_order_release);
	return NULL;
}

int tui_atlas_hist_start(tui_atlas *t)
{
	if (!t->n_layers)
		return -EINVAL;
	if (t->running)
		return -EBUSY;
	atomic_store_explicit(&t->done, 0, memory_order_relaxed);
	const int rc = pthread_create(&t->th, NULL, hist_main, t);
	if (rc)
		return -rc;
	t->running = 1;
	return 0;
}

int tui_atlas_hist_poll(tui_atlas *t)
{
	if (!t->running || !atomic_load_explicit(&t->done, memory_order_acquire))
		return 0;
	pthread_join(t->th, NULL);
	t->running = 0;
	t->hist_profiles = t->w_profiles;
	t->hist_clusters = t->w_clusters;
	snprintf(t->hist_msg, sizeof t->hist_msg, "%s", t->w_msg);
	if (t->w_clusters > 0)
		memcpy(t->hist_order, t->w_order, sizeof(int) * (size_t)t->n_layers * (size_t)t->n_experts);
	return 1;
}
