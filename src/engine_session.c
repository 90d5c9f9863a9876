/* engine_session.c - binding the engine's sequence state to persisted KV
 * sessions (kv_file.h).
 *
 * The state's KV rows are exactly what the session file stores (normalized
 * latent + roped key, float32), so restoring a session is a copy: no
 * prefill runs for stored tokens, and the continuation equals that of an
 * uninterrupted process. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cache_dir.h"
#include "coli_log.h"
#include "engine_internal.h"
#include "kv_store.h"

/* Copy loaded rows into the state and make them the history. */
static void adopt(coli_engine *e, const kv_loaded *l, int n)
{
	const int W = coli_config_kv_width(&e->model->cfg);
	for (int layer = 0; layer < l->n_layers; layer++)
		memcpy(coli_state_kv(e->state, layer), l->rows[layer], sizeof(float) * (size_t)n * W);
	for (int t = 0; t < n; t++)
		e->hist[t] = l->tokens[t];
	e->n_hist = n;
	coli_state_set_pos(e->state, n);
}

int engine_session_bind(coli_engine *e, const char *name, coli_err *err)
{
	if (e->sess && !strcmp(kv_session_name(e->sess), name))
		return 0;
	engine_session_unbind(e);
	int rc = kv_store_name_check(name, err);
	if (rc)
		return rc;
	if ((rc = coli_mkdirs(e->kv_dir, err)))
		return rc;
	const coli_config *c = &e->model->cfg;
	const int L = c->num_hidden_layers, W = coli_config_kv_width(c);
	const char *fp = e->model->container->fingerprint;
	kv_loaded l;
	memset(&l, 0, sizeof l);
	rc = kv_session_open(e->kv_dir, name, fp, L, W, 0, &e->sess, &l, err);
	if (rc == -ENOENT) {
		coli_err_clear(err);
		rc = kv_session_create(e->kv_dir, name, fp, L, W, 0, &e->sess, err);
		if (rc)
			return coli_err_wrap(err, "session %s", name);
		/* a new session starts from an empty context */
		coli_state_rewind(e->state, 0);
		e->n_hist = 0;
		e->sess_saved = 0;
		return 0;
	}
	if (rc)
		return coli_err_wrap(err, "session %s", name);
	if (l.n_tokens + 1 > e->ctx) {
		rc = coli_err_set(err, -E2BIG, "session %s holds %d tokens; the context is %d (use --ctx)",
				  name, l.n_tokens, e->ctx);
		kv_loaded_free(&l);
		kv_session_close(e->sess);
		e->sess = NULL;
		return rc;
	}
	adopt(e, &l, l.n_tokens);
	e->sess_saved = l.n_tokens;
	kv_loaded_free(&l);
	coli_info("session %s: resumed %d tokens from disk", name, e->n_hist);
	return 0;
}

void engine_session_save(coli_engine *e)
{
	if (!e->sess)
		return;
	coli_err err = { 0 };
	const int L = e->model->cfg.num_hidden_layers, W = coli_config_kv_width(&e->model->cfg);
	if (e->sess_saved > e->n_hist) {
		if (kv_session_truncate_tokens(e->sess, e->n_hist, &err))
			coli_warn("session %s: %s", kv_session_name(e->sess), err.msg);
		e->sess_saved = e->n_hist;
	}
	int n = e->n_hist - e->sess_saved;
	if (n > 0) {
		const float **rows = malloc(sizeof *rows * (size_t)(L > 0 ? L : 1));
		if (!rows) {
			coli_warn("session %s: not saved: out of memory", kv_session_name(e->sess));
			return;
		}
		for (int l = 0; l < L; l++)
			rows[l] = coli_state_kv(e->state, l) + (size_t)e->sess_saved * W;
		if (kv_session_append(e->sess, e->hist + e->sess_saved, n, rows, &err))
			coli_warn("session %s: not persisted: %s", kv_session_name(e->sess), err.msg);
		free(rows);
		e->sess_saved = e->n_hist;
	}
	if (kv_session_sync(e->sess, &err))
		coli_warn("session %s: %s", kv_session_name(e->sess), err.msg);
}

void engine_session_unbind(coli_engine *e)
{
	if (!e->sess)
		return;
	engine_session_save(e);
	kv_session_close(e->sess);
	e->sess = NULL;
	e->sess_saved = 0;
}

void engine_session_adopt_prefix(coli_engine *e, const int *prompt, int n)
{
	int have = 0;
	while (have < e->n_hist && have < n && e->hist[have] == prompt[have])
		have++;
	char name[KV_NAME_MAX + 1];
	int match = 0;
	coli_err err = { 0 };
	if (kv_store_find_prefix(e->kv_dir, e->model->container->fingerprint, prompt, n, name,
				 sizeof name, &match, &err) || match <= have)
		return;
	/* at least one prompt token must still be evaluated for logits */
	if (match >= n)
		match = n - 1;
	if (match <= have || match + 1 > e->ctx)
		return;
	const coli_config *c = &e->model->cfg;
	kv_session *s = NULL;
	kv_loaded l;
	memset(&l, 0, sizeof l);
	if (kv_session_open(e->kv_dir, name, e->model->container->fingerprint, c->num_hidden_layers,
			    coli_config_kv_width(c), KV_OPEN_READONLY, &s, &l, &err)) {
		coli_warn("prefix reuse from session %s skipped: %s", name, err.msg);
		return;
	}
	/* the file may have changed since the match: re-check the tokens */
	int ok = l.n_tokens >= match;
	for (int t = 0; ok && t < match; t++)
		ok = l.tokens[t] == prompt[t];
	if (ok) {
		adopt(e, &l, match);
		coli_info("prompt prefix of %d tokens reused from session %s", match, name);
	}
	kv_loaded_free(&l);
	kv_session_close(s);
}
