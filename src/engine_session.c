/* engine_session.c - binding a slot's sequence to persisted KV sessions
 * (kv_file.h).
 *
 * A slot's KV rows are exactly what the session file stores (normalized
 * latent + roped key, float32), so restoring a session is a copy: no
 * prefill runs for stored tokens, and the continuation equals that of an
 * uninterrupted process.
 *
 * Binding touches the disk (open, create, the rows): the session writer
 * thread does it (engine_session_load_run) while the slot is busy, the
 * engine thread only posts it and finishes it (engine_session_bound).
 * Prompt-prefix reuse from another saved session is the same: the engine
 * thread looks the prompt up in the prefix index (RAM), the writer opens
 * that file and reads the rows (engine_session_adopt_run), the engine
 * thread makes them the slot's history (engine_session_adopted). Nor does
 * unbinding write on the engine thread: what a slot holds beyond its file
 * is handed to the writer, and the slot keeps it, bound and busy, until
 * it is on disk. */
#include "config.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kv_cache_dir.h"
#include "coli_log.h"
#include "engine_internal.h"
#include "kv_store.h"

/* Persisted parts of a sequence's state ("slots", kv_file.h): the main
 * layers' attention rows, then the index keys of the layers that run
 * their own indexer, in layer order. */
static int n_slots(const coli_config *c)
{
	return c->num_hidden_layers + coli_config_index_layers(c);
}

/* Slot k's RAM rows in q and their width. */
static float *slot_rows(const coli_config *c, coli_seq *q, int k, int *width)
{
	if (k < c->num_hidden_layers) {
		*width = coli_config_kv_width(c);
		return coli_seq_kv(q, k);
	}
	*width = c->index_head_dim;
	int j = k - c->num_hidden_layers; /* the j-th full indexer layer */
	for (int l = 0; l < c->num_hidden_layers; l++)
		if (c->index_types[l] == 'F' && j-- == 0)
			return coli_seq_index_keys(q, l);
	return NULL; /* not reached: k < n_slots */
}

/* Open NAME with this model's shape (an indexer's keys included). */
static int session_open(coli_engine *e, const char *name, int flags, kv_session **s, kv_loaded *l,
			coli_err *err)
{
	const coli_config *c = &e->model->cfg;
	const int F = coli_config_index_layers(c);
	return kv_session_open_indexed(e->kv_dir, name, e->model->container->fingerprint, c->num_hidden_layers,
				       coli_config_kv_width(c), F, F ? c->index_head_dim : 0, flags, s, l, err);
}

int engine_session_bind(coli_engine *e, engine_slot *sl, const char *name, coli_err *err)
{
	if (sl->sess && !strcmp(kv_session_name(sl->sess), name))
		return 0;
	/* admission released the slot's other session, and this one from any
	 * other slot (engine_session_release): nothing is left to save */
	if (engine_session_release(e, sl, name))
		return coli_err_set(err, -EBUSY, "session %s: the slot's last save is still being written", name);
	/* from here on the slot's history is the session's */
	sl->hist_private = 1;
	int rc = kv_store_name_check(name, err);
	if (rc)
		return rc;
	/* everything else touches the disk (the token ids, a create's fsyncs,
	 * the rows): the session writer does it while the other slots step */
	snprintf(sl->resume, sizeof sl->resume, "%s", name);
	sl->resuming = SLOT_RESUME_SESSION;
	engine_load *l = engine_session_writer_load(e, sl);
	memset(l, 0, sizeof *l);
	l->sl = sl;
	engine_session_writer_post_load(e, sl);
	return 1;
}

#ifdef COLI_FAULT_INJECTION
/* Test builds: COLI_FAULT_KV_RESUME_WAIT=PATH holds a resume's or a
 * prefix adoption's row read until PATH exists; COLI_FAULT_KV_RESUME_EIO=1
 * fails it with EIO. */
static int fault_resume(const char *name, coli_err *err)
{
	const char *path = getenv("COLI_FAULT_KV_RESUME_WAIT");
	while (path && *path && access(path, F_OK) != 0)
		nanosleep(&(struct timespec){ .tv_nsec = 10 * 1000000L }, NULL);
	const char *eio = getenv("COLI_FAULT_KV_RESUME_EIO");
	if (eio && *eio == '1')
		return coli_err_set(err, -EIO, "%s.kv: read rows: %s", name, strerror(EIO));
	return 0;
}
#endif

void engine_session_load_run(coli_engine *e, engine_load *l)
{
	engine_slot *sl = l->sl;
	const char *name = sl->resume;
	coli_err *err = &l->err;
	const coli_config *c = &e->model->cfg;
	const int L = c->num_hidden_layers, W = coli_config_kv_width(c), F = coli_config_index_layers(c);
	kv_loaded t;
	memset(&t, 0, sizeof t);
	if ((l->rc = kv_mkdirs(e->kv_dir, err)))
		return;
	/* token ids first; then only the rows that fit in RAM */
	int rc = session_open(e, name, KV_OPEN_NO_ROWS, &l->sess, &t, err);
	if (rc == -ENOENT) {
		coli_err_clear(err);
		rc = kv_session_create_indexed(e->kv_dir, name, e->model->container->fingerprint, L, W, F,
					       F ? c->index_head_dim : 0, 0, &l->sess, err);
		l->created = !rc;
		l->rc = rc ? coli_err_wrap(err, "session %s", name) : 0;
		return;
	}
	if (rc) {
		l->sess = NULL;
		l->rc = coli_err_wrap(err, "session %s", name);
		return;
	}
	if (t.n_tokens + 1 > e->ctx)
		rc = coli_err_set(err, -E2BIG, "session %s holds %d tokens; the context is %d (use --ctx)", name,
				  t.n_tokens, e->ctx);
	/* the newest rows go to RAM; older ones stay in the file and are read
	 * back on demand when the session is longer than --kv-ram */
	const int n = t.n_tokens, cap = coli_seq_capacity(sl->seq);
	const int in_ram = n < cap - e->prefill_batch ? n : cap - e->prefill_batch;
	const int base = n - in_ram;
#ifdef COLI_FAULT_INJECTION
	if (!rc && (rc = fault_resume(name, err)))
		rc = coli_err_wrap(err, "session %s", name);
#endif
	for (int k = 0; k < n_slots(c) && !rc; k++) {
		int w;
		float *dst = slot_rows(c, sl->seq, k, &w);
		if (in_ram > 0 && (rc = kv_session_read_rows(l->sess, k, base, in_ram, dst, err)))
			rc = coli_err_wrap(err, "session %s", name);
	}
	if (!rc) {
		memcpy(sl->hist, t.tokens, sizeof(int) * (size_t)n);
		l->n = n;
		l->base = base;
	} else {
		kv_session_close(l->sess);
		l->sess = NULL;
	}
	kv_loaded_free(&t);
	l->rc = rc;
}

int engine_session_bound(coli_engine *e, engine_slot *sl, coli_err *err)
{
	engine_load *l = engine_session_writer_load(e, sl);
	const char *name = sl->resume;
	int rc = l->rc;
	sl->resuming = SLOT_RESUME_NONE;
	sl->sess = l->sess;
	l->sess = NULL;
	sl->sess_cut = -1;
	if (!rc && l->created) {
		/* a new session starts from an empty context */
		coli_seq_rewind(sl->seq, 0);
		sl->n_hist = 0;
		sl->sess_saved = 0;
		return 0;
	}
	if (!rc) {
		coli_seq_set_spill(sl->seq, l->base > 0 ? engine_slot_spill_read : NULL, sl);
		rc = coli_seq_set_window(sl->seq, l->base, l->n, err);
		if (rc)
			coli_err_wrap(err, "session %s", name);
	} else {
		*err = l->err;
	}
	if (rc) {
		if (sl->sess)
			kv_session_close(sl->sess);
		sl->sess = NULL;
		coli_seq_rewind(sl->seq, 0);
		sl->n_hist = 0;
		sl->sess_saved = 0;
		return rc;
	}
	sl->n_hist = l->n;
	sl->sess_saved = l->n;
	coli_info("session %s: resumed %d tokens from disk (%d in RAM)", name, l->n, l->n - l->base);
	return 0;
}

/* Describe the save of what hist holds beyond the file into j (j->rows
 * sized for every part; the slot not busy): pointers into its own KV and
 * hist, which stay as they are while the writer has them. */
static engine_save *save_describe(coli_engine *e, engine_slot *sl, engine_save *j)
{
	const coli_config *c = &e->model->cfg;
	const int base = coli_seq_base(sl->seq);
	j->sess = sl->sess;
	j->trunc = sl->sess_cut;
	sl->sess_cut = -1;
	if (sl->sess_saved > sl->n_hist || sl->sess_saved < base) {
		j->trunc = sl->n_hist;
		sl->sess_saved = sl->n_hist;
	}
	j->n = sl->n_hist - sl->sess_saved;
	j->tokens = sl->hist + sl->sess_saved;
	/* unsaved rows are always in RAM: spilling saves first */
	for (int k = 0; j->n > 0 && k < n_slots(c); k++) {
		int W;
		const float *r = slot_rows(c, sl->seq, k, &W);
		j->rows[k] = r + (size_t)(sl->sess_saved - base) * W;
	}
	j->hist = sl->hist;
	j->n_hist = sl->n_hist;
	j->req = NULL;
	sl->sess_saved = sl->n_hist;
	return j;
}

/* The same into the slot's writer record (engine thread). */
static engine_save *save_fill(coli_engine *e, engine_slot *sl)
{
	return save_describe(e, sl, engine_session_writer_job(e, sl));
}

/* Save on this thread: only at shutdown, once the writer has stopped,
 * and only when there is something to write. */
static void save_now(coli_engine *e, engine_slot *sl)
{
	char msg[256];
	engine_save j;
	memset(&j, 0, sizeof j);
	j.rows = calloc((size_t)n_slots(&e->model->cfg), sizeof *j.rows);
	if (!j.rows) {
		coli_warn("session %s: not saved: out of memory", kv_session_name(sl->sess));
		return;
	}
	engine_session_save_run(e, save_describe(e, sl, &j), msg, sizeof msg);
	free(j.rows);
}

void engine_session_finish(coli_engine *e, engine_slot *sl, coli_request *r, const coli_event *ev)
{
	if (engine_session_busy(e, sl)) {
		/* not reached: a busy slot is not stepped; the next save takes
		 * these rows */
		coli_warn("session %s: turn ended while its last save was being written", kv_session_name(sl->sess));
		engine_request_finish(r, ev);
		return;
	}
	engine_save *j = save_fill(e, sl);
	atomic_fetch_add(&r->refs, 1); /* the writer's, until it ends r */
	j->req = r;
	j->ev = *ev;
	engine_session_writer_post(e, sl);
}

int engine_session_spill_ready(coli_engine *e, engine_slot *sl, coli_err *err)
{
	if (engine_session_busy(e, sl))
		return 1;
	if (sl->sess_saved != sl->n_hist || sl->sess_cut >= 0) {
		save_fill(e, sl);
		engine_session_writer_post(e, sl);
		return 1;
	}
	/* the writer's result, visible since busy was seen clear */
	if (!kv_session_persisted(sl->sess))
		return coli_err_set(err, -EIO, "session %s could not be written: context beyond RAM unavailable",
				    kv_session_name(sl->sess));
	return 0;
}

int engine_session_keep_rows(const coli_engine *e, const engine_slot *sl, int n)
{
	if (!sl->sess)
		return 0;
	/* the finish's last token; with drafting, a verify may fill
	 * COLI_DRAFT_MAX + 1 rows before it */
	int keep = e->draft ? COLI_DRAFT_MAX + 2 : 1;
	const int left = e->ctx - coli_seq_pos(sl->seq) - n; /* no row is kept past the context */
	return keep < left ? keep : left > 0 ? left : 0;
}

int engine_session_eval_last(coli_engine *e, engine_slot *sl, coli_err *err)
{
	coli_seq *q = sl->seq;
	if (coli_seq_pos(q) - coli_seq_base(q) + 1 > coli_seq_capacity(q))
		return coli_err_set(err, -E2BIG, "no KV row left in RAM for the last token: not saved");
	const int pos = coli_seq_pos(q);
	int rc = coli_forward_seq(e->model, e->state, q, &sl->pending, 1, sl->logits, 0, err);
	if (rc) {
		/* only the last token's row may be half written: the turn is
		 * saved without it */
		coli_seq_rewind(q, pos);
		return rc;
	}
	sl->hist[sl->n_hist++] = sl->pending;
	return 0;
}

void engine_session_cut(engine_slot *sl, int k)
{
	if (!sl->sess || sl->sess_saved <= k)
		return;
	if (sl->sess_cut < 0 || sl->sess_cut > k)
		sl->sess_cut = k;
	sl->sess_saved = k;
}

void engine_session_forget(engine_slot *sl)
{
	coli_seq_rewind(sl->seq, 0);
	coli_seq_set_spill(sl->seq, NULL, NULL);
	sl->n_hist = 0;
	if (!sl->sess)
		return;
	/* saving now would cut the file to the forgotten history: nothing */
	kv_session_close(sl->sess);
	sl->sess = NULL;
	sl->sess_saved = 0;
	sl->sess_cut = -1;
}

int engine_session_unbind(coli_engine *e, engine_slot *sl)
{
	if (!sl->sess)
		return 0;
	if (engine_session_busy(e, sl))
		return 1;
	if (sl->sess_saved != sl->n_hist || sl->sess_cut >= 0) {
		/* rows not yet in the file (a turn ended while its save was
		 * being written, a cut): never lost, never an fsync on the
		 * engine thread - the writer saves them while the slot, bound
		 * and busy, keeps them */
		if (!e->sw) {
			save_now(e, sl);
		} else {
			save_fill(e, sl);
			engine_session_writer_post(e, sl);
			return 1;
		}
	}
	kv_session_close(sl->sess);
	sl->sess = NULL;
	sl->sess_saved = 0;
	sl->sess_cut = -1;
	/* rows that were only in the file are gone with it */
	if (coli_seq_base(sl->seq) > 0) {
		coli_seq_rewind(sl->seq, 0);
		coli_seq_set_spill(sl->seq, NULL, NULL);
		sl->n_hist = 0;
	}
	return 0;
}

int engine_session_release(coli_engine *e, engine_slot *sl, const char *session)
{
	int wait = 0;
	if (sl->sess && (!session || strcmp(kv_session_name(sl->sess), session)))
		wait |= engine_session_unbind(e, sl);
	/* the session may be open in another (idle) slot: hand it over */
	for (int i = 0; session && i < e->n_slots; i++) {
		engine_slot *o = &e->slots[i];
		if (o != sl && o->sess && !strcmp(kv_session_name(o->sess), session))
			wait |= engine_session_unbind(e, o);
	}
	return wait;
}

int engine_session_adopt_prefix(coli_engine *e, engine_slot *sl, int n)
{
	const int *prompt = sl->prompt;
	int have = 0;
	while (have < sl->n_hist && have < n && sl->hist[have] == prompt[have])
		have++;
	char name[KV_NAME_MAX + 1];
	int match = 0;
	/* a lookup in RAM: the refresher thread keeps the index current
	 * (kv_prefix_index.h); the file is the session writer's to read */
	if (!e->prefix_ix)
		return 0;
	kv_prefix_index_lookup(e->prefix_ix, e->model->container->fingerprint, prompt, n, name, sizeof name,
			       &match);
	if (match <= have)
		return 0;
	/* at least one prompt token must still be evaluated for logits */
	if (match >= n)
		match = n - 1;
	if (match > coli_seq_capacity(sl->seq) - e->prefill_batch)
		match = coli_seq_capacity(sl->seq) - e->prefill_batch;
	if (match <= have || match + 1 > e->ctx)
		return 0;
	sl->resuming = SLOT_RESUME_PREFIX;
	engine_load *l = engine_session_writer_load(e, sl);
	memset(l, 0, sizeof *l);
	l->sl = sl;
	l->adopt = 1;
	l->n = match;
	snprintf(l->name, sizeof l->name, "%s", name);
	engine_session_writer_post_load(e, sl);
	return 1;
}

void engine_session_adopt_run(coli_engine *e, engine_load *l)
{
	engine_slot *sl = l->sl;
	const coli_config *c = &e->model->cfg;
	const char *name = l->name;
	const int n = l->n;
	coli_err *err = &l->err;
	kv_session *s = NULL;
	kv_loaded t;
	memset(&t, 0, sizeof t);
	/* token ids first: the rows go straight into the slot's KV, and only
	 * once the file is known to still start with the prompt */
	int rc = session_open(e, name, KV_OPEN_READONLY | KV_OPEN_NO_ROWS, &s, &t, err);
	if (!rc) {
		int ok = t.n_tokens >= n;
		for (int i = 0; ok && i < n; i++)
			ok = t.tokens[i] == sl->prompt[i];
		if (!ok)
			rc = coli_err_set(err, -ESTALE, "its file no longer starts with the prompt");
	}
#ifdef COLI_FAULT_INJECTION
	if (!rc)
		rc = fault_resume(name, err);
#endif
	/* 1: failed with the slot untouched; once a row is read, the slot's
	 * KV is partly the file's and the engine forgets it */
	l->rc = rc ? 1 : 0;
	for (int k = 0; k < n_slots(c) && !rc; k++) {
		int w;
		float *dst = slot_rows(c, sl->seq, k, &w);
		if ((rc = kv_session_read_rows(s, k, 0, n, dst, err)))
			l->rc = rc;
	}
	if (rc) {
		/* gone or changed behind the index: prefill instead */
		coli_warn("prefix reuse from session %s skipped: %s", name, err->msg);
		kv_prefix_index_drop(e->prefix_ix, name);
	} else {
		coli_info("prompt prefix of %d tokens reused from session %s", n, name);
	}
	kv_loaded_free(&t);
	kv_session_close(s);
}

void engine_session_adopted(coli_engine *e, engine_slot *sl)
{
	engine_load *l = engine_session_writer_load(e, sl);
	sl->resuming = SLOT_RESUME_NONE;
	if (l->rc > 0)
		return; /* nothing read: the slot holds what it held */
	if (l->rc < 0) {
		/* some rows were read: the KV is partly the file's */
		engine_session_forget(sl);
		return;
	}
	/* the file's tokens are the prompt's (the writer checked) */
	memcpy(sl->hist, sl->prompt, sizeof(int) * (size_t)l->n);
	sl->n_hist = l->n;
	sl->hist_private = 1;
	coli_seq_set_window(sl->seq, 0, l->n, NULL);
}
