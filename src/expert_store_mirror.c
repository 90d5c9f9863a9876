/* expert_store_mirror.c - the plan file of a partial mirror.
 *
 * A mirror directory (--mirror DIR) is either a full copy (DIR/experts/
 * with every shard the store may read from it, as before) or a partial
 * one: DIR/mirror-plan.json names the records it holds, and their bytes
 * are in DIR/partial/shard-NNN.bin, one file per layer with a planned
 * record.
 *
 * Layout choice: each partial shard is a SPARSE file of the primary
 * shard's size with the planned records at their original offsets
 * (e * record_size) and holes elsewhere. The store's reader needs no
 * offset table (a record's offset is the same on every drive), the size
 * check against the manifest still tells a truncated file, and on the
 * usual filesystems (ext4, xfs, btrfs, tmpfs) the holes take no space, so
 * the copy costs the planned bytes. The files live under partial/, not
 * experts/, so a copy interrupted before its plan was written is never
 * taken for a full mirror (whose holes would read as zeros): without the
 * plan the directory holds nothing the store reads. The plan is written
 * last, by util_file's crash-safe replace.
 *
 * The format (JSON, one object; unknown members are ignored; also in
 * colitop-model(5), "Partial mirrors"):
 *   format          "colitop-mirror-plan"
 *   version         1; another version is refused
 *   fingerprint     the container's fingerprint (manifest); another
 *                   model's plan is refused
 *   record_size     bytes per expert record; must match the manifest
 *   n_layers, n_experts   the model's shape; must match
 *   records, bytes  planned records and their bytes (informative)
 *   expected_share  share of reads the plan expects to serve, 0..1
 *   source          what the share was computed from (informative)
 *   layers          array of { "layer": L, "file": "partial/shard-NNN.bin",
 *                   "experts": [e, ...] }; L a MoE layer, each e in
 *                   [0, n_experts), the file a relative path inside DIR
 *                   without "..".
 * What the plan lists is checked against the data by the reader (each
 * record's CRC-32C, format 2 containers): a record whose bytes are wrong
 * or missing (a hole) is read from the primary instead, with one warning
 * (expert_store_verify.c); `coli doctor --mirror DIR` checks them all. */
#include "config.h"

#include "expert_store_mirror.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util_file.h"

#define PLAN_FORMAT "colitop-mirror-plan"

expert_mirror_plan *expert_mirror_plan_new(const coli_container *c)
{
	expert_mirror_plan *p = calloc(1, sizeof *p);
	if (!p)
		return NULL;
	p->n_layers = c->config.num_hidden_layers;
	p->n_experts = c->config.n_routed_experts;
	p->record_size = c->expert_record_size;
	p->has = calloc((size_t)p->n_layers * (size_t)p->n_experts + 1, 1);
	p->files = calloc((size_t)p->n_layers + 1, sizeof *p->files);
	if (!p->has || !p->files) {
		expert_mirror_plan_free(p);
		return NULL;
	}
	return p;
}

void expert_mirror_plan_free(expert_mirror_plan *p)
{
	if (!p)
		return;
	for (int l = 0; p->files && l < p->n_layers; l++)
		free(p->files[l]);
	free(p->files);
	free(p->has);
	free(p);
}

static int set_file(expert_mirror_plan *p, const coli_container *c, int layer)
{
	if (p->files[layer])
		return 0;
	const char *b = strrchr(c->expert_shard_paths[layer], '/');
	b = b ? b + 1 : c->expert_shard_paths[layer];
	size_t n = strlen(b) + sizeof EXPERT_MIRROR_PART_DIR + 1;
	p->files[layer] = malloc(n);
	if (!p->files[layer])
		return -ENOMEM;
	snprintf(p->files[layer], n, "%s/%s", EXPERT_MIRROR_PART_DIR, b);
	return 0;
}

int expert_mirror_plan_add(expert_mirror_plan *p, const coli_container *c, int layer, int e)
{
	uint8_t *h = &p->has[(size_t)layer * (size_t)p->n_experts + (size_t)e];
	if (*h)
		return 0;
	if (set_file(p, c, layer))
		return -ENOMEM;
	*h = 1;
	p->n_records++;
	p->bytes += p->record_size;
	return 0;
}

static int path_ok(const char *f)
{
	if (!*f || f[0] == '/')
		return 0;
	for (const char *s = f; *s;) {
		size_t n = strcspn(s, "/");
		if ((n == 2 && !strncmp(s, "..", 2)) || n == 0)
			return 0;
		s += n;
		if (*s)
			s++;
	}
	return 1;
}

int expert_mirror_plan_load(const char *dir, const coli_container *c, expert_mirror_plan **out,
			    coli_err *err)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", dir, EXPERT_MIRROR_PLAN_FILE);
	*out = NULL;
	FILE *f = fopen(path, "rb");
	if (!f)
		return coli_err_set(err, -errno, "%s: %s", path, strerror(errno));
	json_error_t je;
	json_t *root = json_loadf(f, 0, &je);
	fclose(f);
	if (!root)
		return coli_err_set(err, -EINVAL, "%s: not JSON (line %d: %s)", path, je.line, je.text);
	expert_mirror_plan *p = NULL;
	int rc = -EINVAL;
	const char *fmt = json_string_value(json_object_get(root, "format"));
	json_t *ver = json_object_get(root, "version");
	const char *fp = json_string_value(json_object_get(root, "fingerprint"));
	json_t *layers = json_object_get(root, "layers");
	if (!json_is_object(root) || !fmt || strcmp(fmt, PLAN_FORMAT)) {
		coli_err_set(err, rc, "%s: not a mirror plan (\"format\" is not \"%s\")", path, PLAN_FORMAT);
		goto out;
	}
	if (!json_is_integer(ver) || json_integer_value(ver) != EXPERT_MIRROR_PLAN_VERSION) {
		coli_err_set(err, rc, "%s: plan version %lld; this build reads version %d", path,
			     json_is_integer(ver) ? (long long)json_integer_value(ver) : -1LL,
			     EXPERT_MIRROR_PLAN_VERSION);
		goto out;
	}
	if (!fp || strcmp(fp, c->fingerprint)) {
		coli_err_set(err, rc, "%s: planned for another model (fingerprint %.16s..., this model %.16s...)",
			     path, fp ? fp : "missing", c->fingerprint);
		goto out;
	}
	if (json_integer_value(json_object_get(root, "record_size")) != (json_int_t)c->expert_record_size ||
	    json_integer_value(json_object_get(root, "n_layers")) != c->config.num_hidden_layers ||
	    json_integer_value(json_object_get(root, "n_experts")) != c->config.n_routed_experts) {
		coli_err_set(err, rc, "%s: record size or shape differs from the manifest's", path);
		goto out;
	}
	if (!json_is_array(layers)) {
		coli_err_set(err, rc, "%s: \"layers\" is not an array", path);
		goto out;
	}
	if (!(p = expert_mirror_plan_new(c))) {
		rc = coli_err_set(err, -ENOMEM, "%s: out of memory", path);
		goto out;
	}
	size_t i;
	json_t *ly;
	json_array_foreach(layers, i, ly) {
		json_t *jl = json_object_get(ly, "layer"), *ex = json_object_get(ly, "experts");
		const char *file = json_string_value(json_object_get(ly, "file"));
		json_int_t l = json_is_integer(jl) ? json_integer_value(jl) : -1;
		if (l < 0 || l >= p->n_layers || !c->expert_shard_paths[l] || !json_is_array(ex) || !file) {
			coli_err_set(err, rc, "%s: layers[%zu]: not a MoE layer with \"file\" and \"experts\"", path, i);
			goto out;
		}
		if (!path_ok(file) || p->files[l]) {
			coli_err_set(err, rc, "%s: layer %lld: file \"%s\" %s", path, (long long)l, file,
				     p->files[l] ? "(the layer is listed twice)" : "is not a relative path inside the mirror");
			goto out;
		}
		if (!(p->files[l] = strdup(file))) {
			rc = coli_err_set(err, -ENOMEM, "%s: out of memory", path);
			goto out;
		}
		size_t k;
		json_t *je2;
		json_array_foreach(ex, k, je2) {
			json_int_t e = json_is_integer(je2) ? json_integer_value(je2) : -1;
			if (e < 0 || e >= p->n_experts) {
				coli_err_set(err, rc, "%s: layer %lld: experts[%zu] is not an expert id in [0, %d)", path,
					     (long long)l, k, p->n_experts);
				goto out;
			}
			if (expert_mirror_plan_add(p, c, (int)l, (int)e)) {
				rc = coli_err_set(err, -ENOMEM, "%s: out of memory", path);
				goto out;
			}
		}
	}
	p->share = json_real_value(json_object_get(root, "expected_share"));
	snprintf(p->source, sizeof p->source, "%s",
		 json_string_value(json_object_get(root, "source")) ? json_string_value(json_object_get(root, "source")) : "");
	*out = p;
	p = NULL;
	rc = 0;
out:
	expert_mirror_plan_free(p);
	json_decref(root);
	return rc;
}

int expert_mirror_plan_save(const char *dir, const coli_container *c, const expert_mirror_plan *p,
			    coli_err *err)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", dir, EXPERT_MIRROR_PLAN_FILE);
	json_t *o = json_object(), *layers = json_array();
	json_object_set_new(o, "format", json_string(PLAN_FORMAT));
	json_object_set_new(o, "version", json_integer(EXPERT_MIRROR_PLAN_VERSION));
	json_object_set_new(o, "fingerprint", json_string(c->fingerprint));
	json_object_set_new(o, "record_size", json_integer((json_int_t)p->record_size));
	json_object_set_new(o, "n_layers", json_integer(p->n_layers));
	json_object_set_new(o, "n_experts", json_integer(p->n_experts));
	json_object_set_new(o, "records", json_integer(p->n_records));
	json_object_set_new(o, "bytes", json_integer((json_int_t)p->bytes));
	json_object_set_new(o, "expected_share", json_real(p->share));
	json_object_set_new(o, "source", json_string(p->source));
	for (int l = 0; l < p->n_layers; l++) {
		if (!p->files[l])
			continue;
		json_t *ly = json_object(), *ex = json_array();
		json_object_set_new(ly, "layer", json_integer(l));
		json_object_set_new(ly, "file", json_string(p->files[l]));
		for (int e = 0; e < p->n_experts; e++)
			if (p->has[(size_t)l * (size_t)p->n_experts + (size_t)e])
				json_array_append_new(ex, json_integer(e));
		json_object_set_new(ly, "experts", ex);
		json_array_append_new(layers, ly);
	}
	json_object_set_new(o, "layers", layers);
	char *s = json_dumps(o, JSON_INDENT(1) | JSON_COMPACT);
	json_decref(o);
	if (!s)
		return coli_err_set(err, -ENOMEM, "%s: out of memory", path);
	size_t n = strlen(s);
	s[n] = '\n'; /* json_dumps leaves the NUL; the file ends with a newline */
	int rc = coli_file_replace(path, s, n + 1, err);
	free(s);
	return rc;
}
