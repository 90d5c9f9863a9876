/* cmd_batch_io.c - reading Batch API input, resuming from the output log,
 * formatting output lines. See cmd_batch_io.h for the formats. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <jansson.h>

#include "cmd_batch_io.h"
#include "server_internal.h"
#include "util_array.h"

static void item_free(batch_item *it)
{
	free(it->custom_id);
	free(it->url);
	free(it->body);
	free(it->err_code);
	free(it->err_msg);
}

void batch_input_free(batch_input *in)
{
	if (!in)
		return;
	for (int i = 0; i < in->n; i++)
		item_free(&in->items[i]);
	free(in->items);
	memset(in, 0, sizeof *in);
}

static int item_refuse(batch_item *it, const char *code, const char *fmt, const char *what)
{
	char msg[300];
	snprintf(msg, sizeof msg, fmt, what);
	it->err_code = strdup(code);
	it->err_msg = strdup(msg);
	return it->err_code && it->err_msg ? 0 : -ENOMEM;
}

/* Requests without max_tokens run to the context: assume they are long. */
#define COST_UNBOUNDED 1000000L

static long item_cost(json_t *body, size_t body_len)
{
	json_t *m = json_object_get(body, "max_completion_tokens");
	if (!json_is_integer(m))
		m = json_object_get(body, "max_tokens");
	if (!json_is_integer(m))
		m = json_object_get(body, "max_output_tokens");
	long gen = json_is_integer(m) && json_integer_value(m) > 0 ? (long)json_integer_value(m)
								   : COST_UNBOUNDED;
	/* a decode step costs about what 16 prompt positions cost in one
	 * prefill step; 4 bytes of JSON are about one token */
	return gen + (long)(body_len / 64);
}

/* The value at a dotted path from the line's root ("label",
 * "body.metadata.lang"), or NULL. */
static json_t *field_at(json_t *j, const char *path)
{
	char key[256];
	while (j && *path) {
		size_t n = strcspn(path, ".");
		if (n >= sizeof key)
			return NULL;
		memcpy(key, path, n);
		key[n] = 0;
		j = json_object_get(j, key);
		path += n + (path[n] == '.');
	}
	return j;
}

/* --label-field: body.metadata.label := the line's FIELD (a string);
 * absent or null leaves the request unlabelled. */
static int item_label(json_t *j, json_t *body, const char *label_field, batch_item *it, int *refused)
{
	*refused = 0;
	json_t *v = label_field ? field_at(j, label_field) : NULL;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v)) {
		*refused = 1;
		return item_refuse(it, "invalid_label", "--label-field %.100s is not a string", label_field);
	}
	json_t *md = json_object_get(body, "metadata");
	if (!json_is_object(md)) {
		md = json_object();
		if (!md || json_object_set_new(body, "metadata", md))
			return -ENOMEM;
	}
	return json_object_set(md, "label", v) ? -ENOMEM : 0;
}

/* One input line into it; -EINVAL with err when the file must be refused. */
static int item_parse(const char *path, int lineno, const char *line, size_t len, const char *label_field,
		      batch_item *it,
		      coli_err *err)
{
	json_error_t je;
	/* U+0000 in a prompt is the server's to answer (per line), not a
	 * reason to refuse the file */
	json_t *j = json_loadb(line, len, JSON_ALLOW_NUL, &je);
	int rc = -EINVAL, too_big = 0;
	it->line = lineno;
	if (!j && json_error_code(&je) == json_error_numeric_overflow) {
		/* valid JSON that jansson cannot hold (an integer beyond int64,
		 * as in "max_tokens": 9223372036854775808): the server answers
		 * such a request 400, so the line gets that error, not the file */
		json_error_t je2;
		j = json_loadb(line, len, JSON_ALLOW_NUL | JSON_DECODE_INT_AS_REAL, &je2);
		too_big = j != NULL;
	}
	if (!json_is_object(j)) {
		coli_err_set(err, -EINVAL, "%s:%d: not a JSON object%s%s", path, lineno,
			     j ? "" : ": ", j ? "" : je.text);
		goto out;
	}
	json_t *cid = json_object_get(j, "custom_id");
	if (!json_is_string(cid) || !json_string_length(cid) ||
	    strlen(json_string_value(cid)) != json_string_length(cid)) {
		coli_err_set(err, -EINVAL, "%s:%d: custom_id missing or not a non-empty string "
			     "without U+0000", path, lineno);
		goto out;
	}
	if (!(it->custom_id = strdup(json_string_value(cid))))
		goto oom;
	json_t *method = json_object_get(j, "method"), *url = json_object_get(j, "url");
	json_t *body = json_object_get(j, "body");
	const char *u = json_string_value(url);
	if (too_big) {
		if (item_refuse(it, "invalid_request_error", "invalid JSON: %s", je.text))
			goto oom;
	} else if (method && (!json_is_string(method) || strcmp(json_string_value(method), "POST"))) {
		if (item_refuse(it, "invalid_method", "method must be \"POST\"%s", ""))
			goto oom;
	} else if (!u || (strcmp(u, "/v1/chat/completions") && strcmp(u, "/v1/completions") &&
			  strcmp(u, "/chat/completions") && strcmp(u, "/completions") &&
			  strcmp(u, "/v1/responses") && strcmp(u, "/responses"))) {
		if (item_refuse(it, "invalid_url",
				"url '%.200s' is not supported (use /v1/chat/completions, "
				"/v1/completions or /v1/responses)", u ? u : "(missing)"))
			goto oom;
	} else if (!json_is_object(body)) {
		if (item_refuse(it, "invalid_body", "body must be a JSON object%s", ""))
			goto oom;
	} else {
		int refused;
		if (item_label(j, body, label_field, it, &refused))
			goto oom;
		if (refused)
			goto done;
		it->url = strdup(u);
		it->body = json_dumps(body, JSON_COMPACT);
		if (!it->url || !it->body)
			goto oom;
		it->cost = item_cost(body, strlen(it->body));
	}
done:
	rc = 0;
	goto out;
oom:
	rc = coli_err_set(err, -ENOMEM, "%s:%d: out of memory", path, lineno);
out:
	json_decref(j);
	return rc;
}

static int find_id(const batch_input *in, const char *id);

int batch_input_read(const char *path, const char *label_field, batch_input *out, coli_err *err)
{
	memset(out, 0, sizeof *out);
	FILE *f = fopen(path, "r");
	if (!f)
		return coli_err_set(err, -errno, "%s: %s", path, strerror(errno));
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int lineno = 0, rc = 0, alloc = 0;
	while ((n = getline(&line, &cap, f)) >= 0) {
		lineno++;
		while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			line[--n] = '\0';
		if (strspn(line, " \t") == (size_t)n)
			continue;
		if (util_array_grow(&out->items, &alloc, out->n + 1, 64)) {
			rc = coli_err_set(err, -ENOMEM, "%s: out of memory", path);
			break;
		}
		batch_item *it = &out->items[out->n];
		memset(it, 0, sizeof *it);
		rc = item_parse(path, lineno, line, (size_t)n, label_field, it, err);
		if (rc) {
			item_free(it);
			break;
		}
		int dup = find_id(out, it->custom_id);
		out->n++;
		if (dup >= 0) {
			rc = coli_err_set(err, -EINVAL, "%s:%d: custom_id '%.100s' repeats line %d",
					  path, lineno, it->custom_id, out->items[dup].line);
			break;
		}
	}
	if (!rc && ferror(f))
		rc = coli_err_set(err, -EIO, "%s: read error", path);
	if (!rc && out->n == 0)
		rc = coli_err_set(err, -EINVAL, "%s: no requests", path);
	free(line);
	fclose(f);
	if (rc)
		batch_input_free(out);
	return rc;
}

/* Linear: inputs are hundreds to a few thousand lines, read once. */
static int find_id(const batch_input *in, const char *id)
{
	for (int i = 0; i < in->n; i++)
		if (in->items[i].custom_id && !strcmp(in->items[i].custom_id, id))
			return i;
	return -1;
}

int batch_output_scan(const char *path, batch_input *in, int *n_done, int *n_truncated_bytes,
		      coli_err *err)
{
	*n_done = 0;
	*n_truncated_bytes = 0;
	FILE *f = fopen(path, "r");
	if (!f)
		return errno == ENOENT ? 0 : coli_err_set(err, -errno, "%s: %s", path, strerror(errno));
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	long good = 0;   /* offset just past the last complete, valid line */
	int lineno = 0, rc = 0, bad_line = 0;
	while ((n = getline(&line, &cap, f)) >= 0) {
		lineno++;
		if (bad_line) {
			/* a bad line with more after it: not a torn tail */
			rc = coli_err_set(err, -EINVAL,
					  "%s:%d: not an output line of coli batch; refusing to "
					  "append to it (move it away or fix the line)", path, bad_line);
			break;
		}
		int complete = n > 0 && line[n - 1] == '\n';
		json_t *j = complete ? json_loadb(line, (size_t)n, JSON_ALLOW_NUL, NULL) : NULL;
		json_t *cid = json_object_get(j, "custom_id");
		if (!json_is_string(cid)) {
			bad_line = lineno;
			json_decref(j);
			continue;
		}
		int k = find_id(in, json_string_value(cid));
		if (k >= 0 && !in->items[k].done) {
			in->items[k].done = 1;
			(*n_done)++;
		}
		json_decref(j);
		good += (long)n;
	}
	free(line);
	fclose(f);
	if (!rc && bad_line) {
		int fd = open(path, O_WRONLY);
		off_t end = fd >= 0 ? lseek(fd, 0, SEEK_END) : -1;
		if (fd < 0 || end < 0 || ftruncate(fd, (off_t)good))
			rc = coli_err_set(err, -errno, "%s: cannot cut the torn last line: %s", path,
					  strerror(errno));
		else
			*n_truncated_bytes = (int)(end - good);
		if (fd >= 0)
			close(fd);
	}
	return rc;
}

char *batch_output_line(const char *custom_id, int status, const char *body_json,
			const char *err_code, const char *err_msg)
{
	char id[64], req_id[64];
	srv_make_id(id, sizeof id, "batch_req_");
	json_t *resp, *error;
	if (body_json) {
		/* an answer may hold U+0000 (\u0000): still the object it is */
		json_t *b = json_loads(body_json, JSON_ALLOW_NUL, NULL);
		if (!b)
			b = json_string(body_json);
		srv_make_id(req_id, sizeof req_id, "req_");
		resp = json_pack("{s:i, s:s, s:o}", "status_code", status, "request_id", req_id,
				 "body", b);
		error = json_null();
	} else {
		resp = json_null();
		error = json_pack("{s:s, s:s}", "code", err_code ? err_code : "error", "message",
				  err_msg ? err_msg : "");
	}
	/* "o" steals resp and error, also when packing fails */
	json_t *o = json_pack("{s:s, s:s, s:o, s:o}", "id", id, "custom_id", custom_id,
			      "response", resp, "error", error);
	char *t = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
	json_decref(o);
	if (!t)
		return NULL;
	size_t n = strlen(t);
	char *s = realloc(t, n + 2);
	if (!s) {
		free(t);
		return NULL;
	}
	s[n] = '\n';
	s[n + 1] = '\0';
	return s;
}

/* The pid holding a FLOCK on (dev, ino) according to /proc/locks
 * ("1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF"), or 0. */
static long flock_holder(dev_t dev, ino_t ino)
{
	FILE *f = fopen("/proc/locks", "r");
	if (!f)
		return 0;
	char l[256];
	long pid = 0;
	while (!pid && fgets(l, sizeof l, f)) {
		char kind[16], mode[16], rw[16];
		unsigned maj, min;
		unsigned long long in;
		long p;
		if (strstr(l, "->"))
			continue;   /* a waiter, not the holder */
		if (sscanf(l, "%*d: %15s %15s %15s %ld %x:%x:%llu", kind, mode, rw, &p, &maj, &min, &in) == 7 &&
		    !strcmp(kind, "FLOCK") && in == (unsigned long long)ino && maj == major(dev) &&
		    min == minor(dev))
			pid = p;
	}
	fclose(f);
	return pid;
}

int batch_output_open_locked(const char *path, coli_err *err)
{
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return coli_err_set(err, -errno, "%s: %s", path, strerror(errno));
	if (flock(fd, LOCK_EX | LOCK_NB) == 0)
		return fd;
	int e = errno;
	struct stat st;
	long pid = e == EWOULDBLOCK && fstat(fd, &st) == 0 ? flock_holder(st.st_dev, st.st_ino) : 0;
	close(fd);
	if (e != EWOULDBLOCK)
		return coli_err_set(err, -e, "%s: cannot lock: %s", path, strerror(e));
	char who[48] = "another process";
	if (pid > 0)
		snprintf(who, sizeof who, "another process (pid %ld)", pid);
	return coli_err_set(err, -EBUSY, "%s: %s is writing this output (another coli batch?); wait "
			    "for it to finish or choose another output file", path, who);
}

static const batch_input *order_in;

static int cost_cmp(const void *a, const void *b)
{
	const batch_item *x = &order_in->items[*(const int *)a], *y = &order_in->items[*(const int *)b];
	if (x->cost != y->cost)
		return x->cost > y->cost ? -1 : 1;
	return x->line - y->line;
}

int *batch_order(const batch_input *in, int *n_pending)
{
	int *idx = malloc((size_t)(in->n ? in->n : 1) * sizeof *idx), n = 0;
	if (!idx)
		return NULL;
	for (int i = 0; i < in->n; i++)
		if (!in->items[i].done)
			idx[n++] = i;
	order_in = in;   /* qsort has no context argument; called from one thread */
	qsort(idx, (size_t)n, sizeof *idx, cost_cmp);
	order_in = NULL;
	*n_pending = n;
	return idx;
}
