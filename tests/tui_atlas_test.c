/* tui_atlas_test.c - colitop's views of the recorded profiles
 * (tui/tui_atlas.h) on profile files written here:
 *  - tui_atlas_pick keeps per layer the first experts with z > 0, at most
 *    `top`, in the sorted order;
 *  - the conversation view names the expert the session uses more than
 *    the baseline, as atlas_compare on the same files scores it; it reads
 *    the files again only when one changed; a missing session profile and
 *    a file of another model's shape are said, not shown;
 *  - the history order is atlas_cluster + atlas_cluster_order over the
 *    labels (sorted) then the sessions (sorted), a file of another shape
 *    left out; with one profile there is no history order, said why. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "engine_atlas.h"
#include "engine_profile.h"
#include "test_util.h"
#include "tui_atlas.h"

enum { L = 3, E = 8, K = 2 };

static char root[64];

/* A profile of L x E (or other shape) with count(l, e) = f(l, e). */
static void put(const char *rel, int layers, int experts, unsigned (*f)(int, int), uint64_t tokens)
{
	coli_profile p;
	coli_err err = { 0 };
	REQUIRE(coli_profile_init(&p, layers, experts, K, &err) == 0);
	for (int l = 0; l < layers; l++)
		for (int e = 0; e < experts; e++)
			p.counts[l * experts + e] = l == 0 ? 0 : f(l, e);
	p.tokens = tokens;
	p.requests = 1;
	char path[256];
	snprintf(path, sizeof path, "%s/%s", root, rel);
	CHECK(coli_profile_write(path, &p, &err) == 0, "%s", err.msg);
	coli_profile_free(&p);
}

/* Rows of 2 experts each: the session leans on expert 5, label a on the
 * low ids, label b on the high ones. */
static unsigned f_sess(int l, int e) { return e == 5 ? 40 : (unsigned)(5 + l); }
static unsigned f_a(int l, int e) { return e < 4 ? (unsigned)(30 + l) : 5; }
static unsigned f_b(int l, int e) { return e >= 4 ? (unsigned)(30 + e) : (unsigned)(4 + l); }
static unsigned f_all(int l, int e) { return f_sess(l, e) + f_a(l, e) + f_b(l, e); }
static unsigned f_all2(int l, int e) { return 2 * f_all(l, e); }

static void test_pick(void)
{
	atlas_cmp c[6] = {
		{ .layer = 1, .expert = 3, .z = 5 }, { .layer = 2, .expert = 0, .z = 4 },
		{ .layer = 1, .expert = 7, .z = 3 }, { .layer = 1, .expert = 2, .z = 2 },
		{ .layer = 2, .expert = 1, .z = 0 }, { .layer = 1, .expert = 4, .z = -1 },
	};
	tui_spec spec[3 * 2];
	int n[3];
	tui_atlas_pick(c, 6, 3, 2, spec, n);
	CHECK(n[0] == 0 && n[1] == 2 && n[2] == 1, "%d %d %d", n[0], n[1], n[2]);
	CHECK(spec[2].expert == 3 && spec[3].expert == 7 && spec[4].expert == 0);
}

static void wait_hist(tui_atlas *t)
{
	/* the worker reads a few small files: a minute is a broken thread */
	for (int i = 0; i < 6000 && !tui_atlas_hist_poll(t); i++)
		nanosleep(&(struct timespec){ 0, 10 * 1000 * 1000 }, NULL);
	CHECK(!t->running, "the history worker never finished");
}

static void test_files(void)
{
	char d[128];
	snprintf(d, sizeof d, "%s/kv", root);
	REQUIRE(mkdir(d, 0700) == 0);
	snprintf(d, sizeof d, "%s/profiles", root);
	REQUIRE(mkdir(d, 0700) == 0);
	put("kv/s1.prof", L, E, f_sess, 100);
	put("profiles/b.prof", L, E, f_b, 200);
	put("profiles/a.prof", L, E, f_a, 200);
	put("profiles/_all.prof", L, E, f_all, 500);
	put("profiles/other.prof", L + 1, E, f_a, 9); /* another model's shape */
	tui_atlas t;
	REQUIRE(tui_atlas_init(&t, L, E, root) == 0);

	/* the conversation view */
	CHECK(tui_atlas_conv_refresh(&t, "s1") == 1 && t.conv_ok, "%s", t.conv_msg);
	CHECK(t.conv_tokens == 100 && t.base_tokens == 500);
	CHECK(t.n_spec[0] == 0, "a layer nothing routed names nothing");
	for (int l = 1; l < L; l++)
		CHECK(t.n_spec[l] >= 1 && t.spec[l * TUI_ATLAS_TOP].expert == 5, "layer %d names e%d", l,
		      t.spec[l * TUI_ATLAS_TOP].expert);
	/* the same as atlas_compare on the same files */
	coli_profile pa, pb;
	atlas_grid ga, gb;
	coli_err err = { 0 };
	char path[256];
	snprintf(path, sizeof path, "%s/kv/s1.prof", root);
	REQUIRE(coli_profile_read(path, &pa, &err) == 0);
	snprintf(path, sizeof path, "%s/profiles/_all.prof", root);
	REQUIRE(coli_profile_read(path, &pb, &err) == 0);
	REQUIRE(atlas_grid_from_profile(&pa, "s", &ga, &err) == 0 && atlas_grid_from_profile(&pb, "all", &gb, &err) == 0);
	atlas_cmp c[L * E];
	const int n = atlas_compare(&ga, &gb, c);
	atlas_cmp_sort(c, n);
	CHECK(c[0].expert == 5 && c[0].z == t.spec[c[0].layer * TUI_ATLAS_TOP].z);
	coli_profile_free(&pa);
	coli_profile_free(&pb);
	atlas_grid_free(&ga);
	atlas_grid_free(&gb);
	CHECK(tui_atlas_conv_refresh(&t, "s1") == 0, "unchanged files are not read again");
	put("profiles/_all.prof", L, E, f_all2, 1000);
	CHECK(tui_atlas_conv_refresh(&t, "s1") == 1 && t.base_tokens == 1000, "a changed baseline is read");
	CHECK(tui_atlas_conv_refresh(&t, "none") == 1 && !t.conv_ok && strstr(t.conv_msg, "no profile session:none"),
	      "%s", t.conv_msg);
	put("kv/big.prof", L + 1, E, f_a, 9);
	CHECK(tui_atlas_conv_refresh(&t, "big") == 1 && !t.conv_ok && strstr(t.conv_msg, "another model"), "%s",
	      t.conv_msg);
	snprintf(path, sizeof path, "%s/kv/big.prof", root);
	unlink(path);

	/* the history order: a, b, session:s1 (other.prof left out) */
	CHECK(tui_atlas_hist_start(&t) == 0);
	wait_hist(&t);
	CHECK(t.hist_profiles == 3 && t.hist_clusters > 0 && strstr(t.hist_msg, "(2 labels, 1 sessions)"), "%d: %s",
	      t.hist_profiles, t.hist_msg);
	const char *names[3] = { "profiles/a.prof", "profiles/b.prof", "kv/s1.prof" };
	atlas_grid g[3];
	const atlas_grid *gp[3];
	for (int i = 0; i < 3; i++) {
		coli_profile p;
		snprintf(path, sizeof path, "%s/%s", root, names[i]);
		REQUIRE(coli_profile_read(path, &p, &err) == 0);
		REQUIRE(atlas_grid_from_profile(&p, names[i], &g[i], &err) == 0);
		coli_profile_free(&p);
		gp[i] = &g[i];
	}
	int cluster[L * E], favour[TUI_ATLAS_CLUSTERS], order[E];
	CHECK(atlas_cluster(gp, 3, TUI_ATLAS_CLUSTERS, cluster, favour) == t.hist_clusters);
	for (int l = 0; l < L; l++) {
		atlas_cluster_order(cluster, E, l, order);
		CHECK(!memcmp(order, t.hist_order + l * E, sizeof order), "layer %d: another order", l);
	}
	for (int i = 0; i < 3; i++)
		atlas_grid_free(&g[i]);

	/* one profile: no history order, and why */
	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof path, "%s/%s", root, names[i]);
		unlink(path);
	}
	CHECK(tui_atlas_hist_start(&t) == 0);
	wait_hist(&t);
	CHECK(t.hist_profiles == 1 && t.hist_clusters == 0 && strstr(t.hist_msg, "needs two"), "%s", t.hist_msg);
	tui_atlas_free(&t);
}

int main(void)
{
	snprintf(root, sizeof root, "/tmp/tui-atlas-XXXXXX");
	REQUIRE(mkdtemp(root) != NULL);
	test_pick();
	test_files();
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
	CHECK(system(cmd) == 0);
	return test_summary(__FILE__);
}
