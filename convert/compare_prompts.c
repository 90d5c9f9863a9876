/* compare_prompts.c - the PROMPTS file of `coli compare`.
 *
 * Plain text (one prompt a line) or JSONL; a file is JSONL when every
 * non-empty line is a JSON object, so a text prompt that happens to be
 * valid JSON on one line of many does not switch the format. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "compare.h"
#include "util_array.h"

void cmp_prompts_free(cmp_prompts *ps)
{
	if (!ps)
		return;
	for (int i = 0; i < ps->n; i++) {
		free(ps->p[i].id);
		free(ps->p[i].messages);
		free(ps->p[i].response_format);
	}
	free(ps->p);
	memset(ps, 0, sizeof *ps);
}

/* messages = [system?] + user(prompt) or the given array. */
static int prompt_from_json(const char *path, int lineno, json_t *o, cmp_prompt *p,
			    coli_err *err)
{
	json_t *msgs = json_object_get(o, "messages"), *prompt = json_object_get(o, "prompt");
	json_t *sys = json_object_get(o, "system"), *id = json_object_get(o, "id");
	json_t *rf = json_object_get(o, "response_format");
	json_t *arr = NULL;
	if (json_is_array(msgs) && json_array_size(msgs)) {
		arr = json_deep_copy(msgs);
	} else if (json_is_string(prompt)) {
		arr = json_array();
		json_array_append_new(arr, json_pack("{s:s, s:O}", "role", "user", "content", prompt));
	} else {
		return coli_err_set(err, -EINVAL,
				    "%s:%d: needs \"messages\" (a non-empty array) or \"prompt\" (a string)",
				    path, lineno);
	}
	if (sys && !json_is_string(sys)) {
		json_decref(arr);
		return coli_err_set(err, -EINVAL, "%s:%d: \"system\" must be a string", path, lineno);
	}
	if (rf && !json_is_null(rf) && !json_is_object(rf)) {
		json_decref(arr);
		return coli_err_set(err, -EINVAL, "%s:%d: \"response_format\" must be an object",
				    path, lineno);
	}
	if (sys)
		json_array_insert_new(arr, 0, json_pack("{s:s, s:O}", "role", "system", "content", sys));
	char num[32];
	snprintf(num, sizeof num, "%d", lineno);
	if (json_is_integer(id))
		snprintf(num, sizeof num, "%lld", (long long)json_integer_value(id));
	p->id = strdup(json_is_string(id) ? json_string_value(id) : num);
	p->messages = json_dumps(arr, JSON_COMPACT);
	if (json_is_object(rf))
		p->response_format = json_dumps(rf, JSON_COMPACT);
	json_decref(arr);
	if (!p->id || !p->messages || (json_is_object(rf) && !p->response_format))
		return coli_err_set(err, -ENOMEM, "%s: out of memory", path);
	return 0;
}

static int prompt_from_text(const char *line, int lineno, cmp_prompt *p)
{
	char num[32];
	snprintf(num, sizeof num, "%d", lineno);
	json_t *arr = json_pack("[{s:s, s:s}]", "role", "user", "content", line);
	p->id = strdup(num);
	p->messages = arr ? json_dumps(arr, JSON_COMPACT) : NULL;
	json_decref(arr);
	return p->id && p->messages ? 0 : -ENOMEM;
}

int cmp_prompts_read(const char *path, cmp_prompts *out, coli_err *err)
{
	memset(out, 0, sizeof *out);
	FILE *f = fopen(path, "r");
	if (!f)
		return coli_err_set(err, -errno, "%s: %s", path, strerror(errno));
	char **lines = NULL, *line = NULL;
	int *nums = NULL, n = 0, cap = 0, lineno = 0, rc = 0, all_json = 1;
	size_t lcap = 0;
	ssize_t len;
	while ((len = getline(&line, &lcap, f)) >= 0) {
		lineno++;
		while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			line[--len] = '\0';
		if (strspn(line, " \t") == (size_t)len)
			continue;
		int cap_l = cap, cap_n = cap;   /* two arrays, one capacity */
		if (util_array_grow(&lines, &cap_l, n + 1, 16) || util_array_grow(&nums, &cap_n, n + 1, 16)) {
			rc = coli_err_set(err, -ENOMEM, "%s: out of memory", path);
			goto out;
		}
		cap = cap_n;
		if (!(lines[n] = strdup(line))) {
			rc = coli_err_set(err, -ENOMEM, "%s: out of memory", path);
			goto out;
		}
		nums[n++] = lineno;
		if (all_json) {
			json_t *j = json_loads(line, 0, NULL);
			all_json = json_is_object(j);
			json_decref(j);
		}
	}
	if (n == 0) {
		rc = coli_err_set(err, -EINVAL, "%s: no prompts", path);
		goto out;
	}
	if (!(out->p = calloc((size_t)n, sizeof *out->p))) {
		rc = coli_err_set(err, -ENOMEM, "%s: out of memory", path);
		goto out;
	}
	for (int i = 0; i < n && !rc; i++) {
		out->n++;
		if (all_json) {
			json_t *j = json_loads(lines[i], 0, NULL);
			rc = prompt_from_json(path, nums[i], j, &out->p[i], err);
			json_decref(j);
		} else if (prompt_from_text(lines[i], nums[i], &out->p[i])) {
			rc = coli_err_set(err, -ENOMEM, "%s: out of memory", path);
		}
	}
out:
	for (int i = 0; i < n; i++)
		free(lines[i]);
	free(lines);
	free(nums);
	free(line);
	fclose(f);
	if (rc)
		cmp_prompts_free(out);
	return rc;
}
