/* pull_state.c - the resume state file (`coli pull`; pull_int.h). */
#include "config.h"

#include "pull_int.h"

/* ---- state ---- */

int pull_state_save(pull_ctx *c, coli_err *err)
{
	json_t *shards = json_object();
	for (int i = 0; shards && i < c->n_sh; i++) {
		shard *s = &c->sh[i];
		char *bits = malloc((size_t)s->n_chunks + 1);
		if (!bits)
			break;
		for (int k = 0; k < s->n_chunks; k++)
			bits[k] = s->chunks[k].got == s->chunks[k].len ? '1' : '0';
		bits[s->n_chunks] = '\0';
		json_object_set_new(shards, s->hf->path,
				    json_pack("{s:s,s:b}", "chunks", bits, "verified", s->verified));
		free(bits);
	}
	json_t *st = json_pack("{s:s,s:i,s:s,s:s,s:s,s:i,s:o}", "format", PSTATE_FORMAT, "version", 1,
			       "repo", c->o->repo, "revision", c->o->revision, "commit",
			       c->repo.commit, "step", c->step_done, "shards", shards);
	if (!st)
		return coli_err_set(err, -ENOMEM, "out of memory");
	int rc = manifest_save(c->state_path, st, err);
	json_decref(st);
	return rc;
}

/* The pinned commit of an earlier run of the same pull, "" when none. */
int pull_state_load(pull_ctx *c, char *commit, size_t cap, coli_err *err)
{
	commit[0] = '\0';
	if (access(c->state_path, F_OK) != 0)
		return 0;
	coli_err e2 = { 0, "" };
	json_t *st = NULL;
	const char *repo, *rev, *sha;
	if (manifest_load(c->state_path, &st, &e2) < 0 ||
	    json_unpack(st, "{s:s,s:s,s:s}", "repo", &repo, "revision", &rev, "commit", &sha) < 0) {
		coli_warn("%s: unreadable (%s), starting the download over", c->state_path,
			  e2.msg[0] ? e2.msg : "bad format");
		json_decref(st);
		return 0;
	}
	if (strcmp(repo, c->o->repo) || strcmp(rev, c->o->revision)) {
		int rc = c->o->conv.force ? 0 :
			coli_err_set(err, -EEXIST, "%s: holds a partial pull of %s@%s; run that again "
				     "to finish it, or use --force to start over", c->o->conv.out_dir,
				     repo, rev);
		json_decref(st);
		return rc;
	}
	snprintf(commit, cap, "%s", sha);
	c->state = st;
	return 0;
}
