/* tui_atlas.h - colitop's two views of the recorded routing profiles
 * (engine_profile.h), with coli atlas's own arithmetic (engine_atlas.h).
 *
 * The conversation view (key c in the Expert map): the chat session's
 * profile, CACHE_DIR/kv/NAME.prof, against the baseline
 * CACHE_DIR/profiles/_all.prof, the sum of every request the engine
 * recorded in this cache directory (the conversation's own included):
 * counts, so the comparison is a test, where the learned heat is a
 * decayed figure with no counts behind it. Each (layer, expert) is
 * scored by atlas_compare, the z of its log odds ratio, exactly what
 * `coli atlas compare session:NAME _all` prints; per MoE layer the
 * experts with z > 0 are named, most specific first. The files are
 * stat'ed at most once a second while the view is shown and read again
 * only when one changed (two reads of 168 + 8 x layers x experts bytes,
 * on the TUI thread, never per frame).
 *
 * The history order (key a): every (layer, expert) clustered like
 * `coli atlas cluster` (atlas_cluster, 8 clusters) over the recorded
 * profiles: the labels in profiles/ (sorted by name, _all left out) and
 * then the sessions' in kv/ (sorted), at most 64, those of another shape
 * left out; each layer's experts then in atlas_cluster_order. Reading
 * and k-means run on a thread of their own, started on demand; the TUI
 * thread takes the result once the thread says it is done. */
#ifndef COLI_TUI_ATLAS_H
#define COLI_TUI_ATLAS_H

#include <pthread.h>
#include <stdatomic.h>

#include "engine_atlas.h"
#include "kv_store.h"

#define TUI_ATLAS_TOP 8          /* experts named per layer */
#define TUI_ATLAS_CLUSTERS 8     /* coli atlas cluster's default */
#define TUI_ATLAS_PROFILES 64    /* coli atlas cluster's limit */

typedef struct tui_spec {
	int expert;
	double z;
	double a_rate, b_rate;       /* chosen per routed row: conversation, baseline */
} tui_spec;

typedef struct tui_atlas {
	int n_layers, n_experts;
	char kv_dir[4200], prof_dir[4200];
	/* the conversation view (TUI thread) */
	char session[KV_NAME_MAX + 1];
	long long stamp[2][3];       /* (mtime ns, size, inode) of NAME.prof, _all.prof */
	int conv_ok;                 /* both read: spec is valid */
	double conv_tokens, base_tokens;
	tui_spec *spec;              /* (n_layers, TUI_ATLAS_TOP) */
	int *n_spec;                 /* (n_layers) */
	char conv_msg[600];          /* why nothing is shown ("" when conv_ok) */
	/* the history order: the worker owns the w_* fields while running;
	 * the TUI thread copies them out after done (acquire) and the join */
	pthread_t th;
	int running;                 /* TUI thread: a worker was started */
	_Atomic int done;            /* worker -> TUI: release */
	int *w_order;                /* (n_layers, n_experts) the worker's result */
	int w_profiles, w_clusters;
	char w_msg[200];
	/* the TUI thread's: the latest finished clustering */
	int *hist_order;             /* (n_layers, n_experts) position -> expert */
	int hist_profiles, hist_clusters;
	char hist_msg[200];          /* what happened, in words */
} tui_atlas;

int tui_atlas_init(tui_atlas *t, int n_layers, int n_experts, const char *cache_dir);
/* Waits for a running worker. */
void tui_atlas_free(tui_atlas *t);

/* Reload the conversation's profile and the baseline if either changed
 * (or the session did): 1 when the view's content changed. */
int tui_atlas_conv_refresh(tui_atlas *t, const char *session);

/* Pure: the cells c[0..n) sorted by atlas_cmp_sort -> per layer the
 * first `top` with z > 0 into spec (n_layers x top), counts in n_spec. */
void tui_atlas_pick(const atlas_cmp *c, int n, int n_layers, int top, tui_spec *spec, int *n_spec);

/* Start clustering the recorded history (0; -EBUSY while one runs;
 * -errno when the thread cannot start). */
int tui_atlas_hist_start(tui_atlas *t);
/* 1 once, when a started clustering has finished (the worker joined):
 * hist_order is valid when hist_clusters > 0, hist_msg says what was
 * done either way. */
int tui_atlas_hist_poll(tui_atlas *t);

#endif
