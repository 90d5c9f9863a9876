/* pull_hub.c - see pull_hub.h. */
#include "config.h"

#include "pull_hub.h"

#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "coli_log.h"
#include "pull_retry.h"
#include "util_file.h"
#include "util_buf.h"
#include "util_time.h"

#define HUB_DEFAULT_ENDPOINT "https://huggingface.co"
#define HUB_MAX_BODY (64u << 20)   /* JSON answers; a model's file list is far smaller */

static int curl_ready(coli_err *err)
{
	static int done;
	if (!done) {
		if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
			return coli_err_set(err, -EIO, "libcurl: initialisation failed");
		done = 1;
	}
	return 0;
}

int hub_client_init(hub_client *h, const char *repo, coli_err *err)
{
	const char *ep = getenv("HF_ENDPOINT"), *tok = getenv("HF_TOKEN");
	memset(h, 0, sizeof *h);
	if (!ep || !*ep)
		ep = HUB_DEFAULT_ENDPOINT;
	if (strlen(ep) >= sizeof h->endpoint)
		return coli_err_set(err, -EINVAL, "HF_ENDPOINT: too long");
	snprintf(h->endpoint, sizeof h->endpoint, "%s", ep);
	for (size_t n = strlen(h->endpoint); n > 0 && h->endpoint[n - 1] == '/'; n--)
		h->endpoint[n - 1] = '\0';
	int rc;
	if ((rc = hub_check_repo(repo, err)) < 0)
		return rc;
	snprintf(h->repo, sizeof h->repo, "%s", repo);
	if (tok && *tok) {
		if (strlen(tok) > 1000 || strpbrk(tok, "\r\n"))
			return coli_err_set(err, -EINVAL, "HF_TOKEN: not a token (too long or multi-line)");
		snprintf(h->auth, sizeof h->auth, "Authorization: Bearer %s", tok);
	}
	h->max_tries = 6;
	h->backoff_s = 1.0;
	h->deadline_s = 600.0;
	if ((rc = hub_env_seconds("COLI_PULL_BACKOFF", 0, 60, &h->backoff_s, err)) < 0 ||
	    (rc = hub_env_seconds("COLI_PULL_RETRY_DEADLINE", 0.001, 1e7, &h->deadline_s, err)) < 0)
		return rc;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	h->jitter = ((uint64_t)ts.tv_nsec << 20 ^ (uint64_t)ts.tv_sec ^ (uint64_t)getpid()) | 1;
	return curl_ready(err);
}

/* Path segments percent-encoded, '/' kept between them. */
static char *escape_path(CURL *c, const char *path)
{
	size_t cap = strlen(path) * 3 + 1, n = 0;
	char *out = malloc(cap);
	if (!out)
		return NULL;
	out[0] = '\0';
	while (*path) {
		size_t seg = strcspn(path, "/");
		char *e = curl_easy_escape(c, path, (int)seg);
		if (!e) {
			free(out);
			return NULL;
		}
		n += (size_t)snprintf(out + n, cap - n, "%s%s", n ? "/" : "", e);
		curl_free(e);
		path += seg;
		while (*path == '/')
			path++;
	}
	return out;
}

static char *resolve_url(CURL *c, const hub_client *h, const char *commit, const char *path)
{
	char *ep = escape_path(c, path), *er = escape_path(c, h->repo), *ec = escape_path(c, commit);
	char *url = NULL;
	if (ep && er && ec && asprintf(&url, "%s/%s/resolve/%s/%s", h->endpoint, er, ec, ep) < 0)
		url = NULL;
	free(ep);
	free(er);
	free(ec);
	return url;
}

/* One answer's status as a line: 401/403/404 name what the user can do. */
static int status_error(const hub_client *h, long status, const char *what, const char *tries,
			coli_err *err)
{
	switch (status) {
	case 401:
		return coli_err_set(err, -EACCES,
				    "%s: 401 unauthorized for %s: the repository is private or gated "
				    "%s", h->repo, what,
				    h->auth[0] ? "and HF_TOKEN is not valid for it"
					       : "(set HF_TOKEN to a token that has access)");
	case 403:
		return coli_err_set(err, -EACCES,
				    "%s: 403 forbidden for %s: this token has not been granted access "
				    "(accept the model's terms on its page, or use another HF_TOKEN)",
				    h->repo, what);
	case 404:
		return coli_err_set(err, -ENOENT,
				    "%s: 404 not found: %s (check the repository name and revision)",
				    h->repo, what);
	case 429:
		return coli_err_set(err, -EAGAIN, "%s: 429 too many requests for %s, still after "
				    "%s; wait and run the same command again", h->repo, what, tries);
	default:
		if (status >= 500)
			return coli_err_set(err, -EIO, "%s: server error %ld for %s, still after %s; "
					    "run the same command again later", h->repo, status, what,
					    tries);
		return coli_err_set(err, -EIO, "%s: unexpected HTTP status %ld for %s", h->repo,
				    status, what);
	}
}

static int retryable(long status)
{
	return status == 429 || status >= 500 || status == 0;
}

/* Failures no retry can mend: a redirect loop, an answer larger than
 * asked for (its Content-Length), a URL curl refuses. */
static int curl_fatal(CURLcode cr)
{
	return cr == CURLE_TOO_MANY_REDIRECTS || cr == CURLE_FILESIZE_EXCEEDED ||
	       cr == CURLE_URL_MALFORMAT || cr == CURLE_UNSUPPORTED_PROTOCOL;
}

typedef struct membuf {
	util_buf b;
	int overflow;
} membuf;

static size_t mem_write(char *data, size_t sz, size_t nm, void *ud)
{
	membuf *m = ud;
	size_t n = sz * nm;
	if (m->b.len + n > HUB_MAX_BODY) {
		m->overflow = 1;
		return 0;
	}
	return util_buf_add(&m->b, data, n) ? 0 : n;
}

static size_t body_header(char *data, size_t sz, size_t nm, void *ud)
{
	long ra = hub_parse_retry_after(data, sz * nm);
	if (ra >= 0)
		*(long *)ud = ra;
	return sz * nm;
}

static void easy_common(CURL *c, const hub_client *h, struct curl_slist *hdrs)
{
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
	curl_easy_setopt(c, CURLOPT_MAXREDIRS, 10L);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "colitop/" PACKAGE_VERSION);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 30L);
	/* A stalled connection (no byte for a minute) counts as dropped. */
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 60L);
	(void)h;
}

/* GET url into memory, retrying what can be retried: every failure is a
 * try, the last try or the deadline ends it. */
static int get_body(hub_client *h, const char *url, const char *what, membuf *body,
		    coli_err *err)
{
	CURL *c = curl_easy_init();
	struct curl_slist *hdrs = NULL;
	int rc = 0;
	double t_first = 0;
	if (!c)
		return coli_err_set(err, -ENOMEM, "libcurl: cannot create a handle");
	if (h->auth[0])
		hdrs = curl_slist_append(hdrs, h->auth);
	for (int attempt = 1;; attempt++) {
		char ebuf[CURL_ERROR_SIZE] = "";
		long status = 0, retry_after = -1;
		util_buf_free(&body->b);
		body->overflow = 0;
		curl_easy_reset(c);
		easy_common(c, h, hdrs);
		curl_easy_setopt(c, CURLOPT_URL, url);
		curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, mem_write);
		curl_easy_setopt(c, CURLOPT_WRITEDATA, body);
		curl_easy_setopt(c, CURLOPT_ERRORBUFFER, ebuf);
		/* refused on its Content-Length, before a byte is read */
		curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)HUB_MAX_BODY);
		curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, body_header);
		curl_easy_setopt(c, CURLOPT_HEADERDATA, &retry_after);
		CURLcode cr = curl_easy_perform(c);
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
		if (cr == CURLE_OK && status >= 200 && status < 300)
			break;
		if (body->overflow || cr == CURLE_FILESIZE_EXCEEDED) {
			rc = coli_err_set(err, -EFBIG, "%s: answer for %s larger than %u MiB", h->repo,
					  what, HUB_MAX_BODY >> 20);
			break;
		}
		if (cr != CURLE_OK && curl_fatal(cr)) {
			rc = coli_err_set(err, -EPROTO, "%s: %s: %s", h->repo, what,
					  ebuf[0] ? ebuf : curl_easy_strerror(cr));
			break;
		}
		/* an answer that came whole with a status that no retry changes */
		if (cr == CURLE_OK && !retryable(status)) {
			rc = status_error(h, status, what, "1 try", err);
			break;
		}
		double now = coli_now_s(), w = hub_backoff(h, attempt, retry_after);
		if (!t_first)
			t_first = now;
		int last = attempt >= h->max_tries, late = now + w - t_first > h->deadline_s;
		if (last || late) {
			char after[96];
			hub_tries_text(after, sizeof after, attempt, late, now - t_first, h->deadline_s);
			if (cr == CURLE_OK)
				rc = status_error(h, status, what, after, err);
			else
				rc = coli_err_set(err, -EIO, "%s: %s: %s (after %s)", h->repo, what,
						  ebuf[0] ? ebuf : curl_easy_strerror(cr), after);
			break;
		}
		coli_info("%s: %s: %s; retrying in %.2f s (try %d of %d)", h->repo, what,
			  cr == CURLE_OK ? "server busy or failing"
			  : status ? "answer cut short" : "connection failed",
			  w, attempt + 1, h->max_tries);
		hub_sleep_s(w);
	}
	curl_slist_free_all(hdrs);
	curl_easy_cleanup(c);
	return rc;
}

int hub_repo_info(hub_client *h, const char *revision, hub_repo *out, coli_err *err)
{
	membuf body = { 0 };
	char *url = NULL, what[400];
	json_t *j = NULL;
	int rc = 0;
	memset(out, 0, sizeof *out);
	CURL *c = curl_easy_init();
	char *rev = c ? curl_easy_escape(c, revision, 0) : NULL;
	if (!rev || asprintf(&url, "%s/api/models/%s/revision/%s?blobs=true", h->endpoint, h->repo,
			     rev) < 0) {
		url = NULL;
		rc = coli_err_set(err, -ENOMEM, "out of memory");
		goto out;
	}
	snprintf(what, sizeof what, "revision '%s'", revision);
	if ((rc = get_body(h, url, what, &body, err)) < 0)
		goto out;
	json_error_t je;
	j = json_loadb(body.b.p ? body.b.p : "", body.b.len, 0, &je);
	json_t *sib = json_object_get(j, "siblings"), *v;
	const char *sha = json_string_value(json_object_get(j, "sha"));
	if (!j || !json_is_array(sib) || !sha || strlen(sha) >= sizeof out->commit ||
	    strspn(sha, "0123456789abcdef") != strlen(sha)) {
		rc = coli_err_set(err, -EPROTO, "%s: the model info for %s is not what the hub "
				  "answers (no commit sha or file list)", h->repo, what);
		goto out;
	}
	snprintf(out->commit, sizeof out->commit, "%s", sha);
	out->files = calloc(json_array_size(sib) + 1, sizeof *out->files);
	if (!out->files) {
		rc = coli_err_set(err, -ENOMEM, "out of memory");
		goto out;
	}
	size_t k;
	json_array_foreach(sib, k, v) {
		const char *name = json_string_value(json_object_get(v, "rfilename"));
		json_t *lfs = json_object_get(v, "lfs");
		const char *oid = json_string_value(json_object_get(lfs, "sha256"));
		json_int_t size = json_integer_value(json_object_get(v, "size"));
		if (!name)
			continue;
		hub_file *f = &out->files[out->n_files];
		if (json_is_integer(json_object_get(lfs, "size")))
			size = json_integer_value(json_object_get(lfs, "size"));
		if (!(f->path = strdup(name))) {
			rc = coli_err_set(err, -ENOMEM, "out of memory");
			goto out;
		}
		f->size = size > 0 ? (uint64_t)size : 0;
		if (oid && strlen(oid) == 64)
			snprintf(f->sha256, sizeof f->sha256, "%s", oid);
		out->n_files++;
	}
out:
	if (rc < 0)
		hub_repo_free(out);
	if (rev)
		curl_free(rev);
	if (c)
		curl_easy_cleanup(c);
	free(url);
	util_buf_free(&body.b);
	json_decref(j);
	return rc;
}

void hub_repo_free(hub_repo *r)
{
	for (int i = 0; r->files && i < r->n_files; i++)
		free(r->files[i].path);
	free(r->files);
	memset(r, 0, sizeof *r);
}

int hub_fetch_file(hub_client *h, const char *commit, const char *path, const char *dest,
		   coli_err *err)
{
	membuf body = { 0 };
	char what[300];
	int rc;
	CURL *c = curl_easy_init();
	char *url = c ? resolve_url(c, h, commit, path) : NULL;
	if (c)
		curl_easy_cleanup(c);
	if (!url)
		return coli_err_set(err, -ENOMEM, "out of memory");
	snprintf(what, sizeof what, "file '%s'", path);
	rc = get_body(h, url, what, &body, err);
	free(url);
	if (rc == 0)
		rc = coli_file_replace(dest, body.b.p ? body.b.p : "", body.b.len, err);
	util_buf_free(&body.b);
	return rc;
}

/* ---- ranged downloads, several connections at once ---- */

typedef struct xfer {
	CURL *c;
	hub_range *r;
	int fd;
	int tries;
	double fail_since;         /* first failure of this range, 0: none yet */
	long long cr_total;        /* the size in the answer's Content-Range, -1 none */
	long retry_after;          /* the answer's Retry-After in seconds, -1 none */
	int bad_status;            /* the answer is not our bytes: do not write them */
	int write_errno;
	uint64_t start_got;        /* got when this request began */
	char ebuf[CURL_ERROR_SIZE];
} xfer;

static size_t range_write(char *data, size_t sz, size_t nm, void *ud)
{
	xfer *x = ud;
	size_t n = sz * nm, done = 0;
	long status = 0;
	curl_easy_getinfo(x->c, CURLINFO_RESPONSE_CODE, &status);
	/* 206: the range asked for. A 200 carries the whole file: only usable
	 * when the range is the whole file from 0. Anything else is an error
	 * page, never file bytes. */
	if (status != 206 && !(status == 200 && x->r->off == 0 && x->start_got == 0)) {
		x->bad_status = 1;
		return n;
	}
	if (x->r->got + n > x->r->len) {
		x->bad_status = 1;   /* the server sent more than asked: refuse */
		return 0;
	}
	while (done < n) {
		ssize_t w = pwrite(x->fd, data + done, n - done,
				   (off_t)(x->r->off + x->r->got + done));
		if (w < 0) {
			if (errno == EINTR)
				continue;
			x->write_errno = errno;
			return 0;
		}
		done += (size_t)w;
	}
	x->r->got += n;
	return n;
}

/* Content-Range: bytes A-B/TOTAL: TOTAL must be the size the hub listed. */
static size_t range_header(char *data, size_t sz, size_t nm, void *ud)
{
	xfer *x = ud;
	size_t n = sz * nm;
	char line[256];
	long ra = hub_parse_retry_after(data, n);
	if (ra >= 0)
		x->retry_after = ra;
	if (n < sizeof line && n > 14 && !strncasecmp(data, "content-range:", 14)) {
		memcpy(line, data, n);
		line[n] = '\0';
		const char *sl = strchr(line, '/');
		if (sl && sl[1] >= '0' && sl[1] <= '9')
			x->cr_total = strtoll(sl + 1, NULL, 10);
	}
	return n;
}

static int xfer_start(CURLM *m, xfer *x, const char *url, struct curl_slist *hdrs,
		      const hub_client *h)
{
	char range[64];
	uint64_t a = x->r->off + x->r->got, b = x->r->off + x->r->len - 1;
	if (!x->c && !(x->c = curl_easy_init()))
		return -ENOMEM;
	curl_easy_reset(x->c);
	easy_common(x->c, h, hdrs);
	snprintf(range, sizeof range, "%llu-%llu", (unsigned long long)a, (unsigned long long)b);
	x->bad_status = 0;
	x->write_errno = 0;
	x->ebuf[0] = '\0';
	x->start_got = x->r->got;
	x->cr_total = -1;
	x->retry_after = -1;
	curl_easy_setopt(x->c, CURLOPT_URL, url);
	curl_easy_setopt(x->c, CURLOPT_RANGE, range);
	/* an answer announcing more than the range is refused before its body */
	curl_easy_setopt(x->c, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)(b - a + 1));
	curl_easy_setopt(x->c, CURLOPT_HEADERFUNCTION, range_header);
	curl_easy_setopt(x->c, CURLOPT_HEADERDATA, x);
	curl_easy_setopt(x->c, CURLOPT_WRITEFUNCTION, range_write);
	curl_easy_setopt(x->c, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(x->c, CURLOPT_PRIVATE, x);
	curl_easy_setopt(x->c, CURLOPT_ERRORBUFFER, x->ebuf);
	return curl_multi_add_handle(m, x->c) == CURLM_OK ? 0 : -EIO;
}

int hub_fetch_ranges(hub_client *h, const char *commit, const char *path, uint64_t file_size,
		     int fd, hub_range *r, int n, int connections, hub_progress_fn fn, void *ctx,
		     coli_err *err)
{
	CURLM *m = curl_multi_init();
	struct curl_slist *hdrs = NULL;
	xfer *x = calloc((size_t)(connections > 0 ? connections : 1), sizeof *x);
	char *url = NULL, what[300];
	int rc = 0, next = 0, active = 0;
	double last_tick = 0, *wait_until = NULL;
	if (connections < 1)
		connections = 1;
	wait_until = calloc((size_t)connections, sizeof *wait_until);
	CURL *tmp = curl_easy_init();
	if (tmp) {
		url = resolve_url(tmp, h, commit, path);
		curl_easy_cleanup(tmp);
	}
	if (!m || !x || !url || !wait_until) {
		rc = coli_err_set(err, -ENOMEM, "out of memory");
		goto out;
	}
	snprintf(what, sizeof what, "file '%s'", path);
	if (h->auth[0])
		hdrs = curl_slist_append(hdrs, h->auth);
	for (int k = 0; k < connections; k++)
		x[k].fd = fd;
	for (;;) {
		/* Give idle slots the next unfinished range. */
		for (int k = 0; k < connections && rc == 0; k++) {
			if (x[k].r || wait_until[k] > 0)
				continue;
			while (next < n && r[next].got >= r[next].len)
				next++;
			if (next >= n)
				break;
			x[k].r = &r[next++];
			x[k].tries = 0;
			x[k].fail_since = 0;
			if (xfer_start(m, &x[k], url, hdrs, h) < 0)
				rc = coli_err_set(err, -ENOMEM, "libcurl: cannot start a transfer");
			else
				active++;
		}
		/* Slots waiting out a backoff restart when it has passed. */
		double now = coli_now_s();
		for (int k = 0; k < connections && rc == 0; k++) {
			if (wait_until[k] > 0 && now >= wait_until[k]) {
				wait_until[k] = 0;
				if (xfer_start(m, &x[k], url, hdrs, h) < 0)
					rc = coli_err_set(err, -ENOMEM, "libcurl: cannot start a transfer");
				else
					active++;
			}
		}
		int waiting = 0;
		for (int k = 0; k < connections; k++)
			waiting += wait_until[k] > 0;
		if (rc < 0 || (active == 0 && waiting == 0))
			break;
		int running = 0;
		curl_multi_perform(m, &running);
		CURLMsg *msg;
		int left, finished = 0;
		while (rc == 0 && (msg = curl_multi_info_read(m, &left))) {
			if (msg->msg != CURLMSG_DONE)
				continue;
			xfer *t = NULL;
			long status = 0;
			curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&t);
			curl_easy_getinfo(msg->easy_handle, CURLINFO_RESPONSE_CODE, &status);
			CURLcode cr = msg->data.result;
			curl_multi_remove_handle(m, t->c);
			active--;
			finished++;
			if (t->write_errno) {
				rc = coli_err_set(err, -t->write_errno, "%s: writing the download: %s",
						  path, strerror(t->write_errno));
				break;
			}
			if (status == 206 && file_size && t->cr_total >= 0 &&
			    (uint64_t)t->cr_total != file_size) {
				rc = coli_err_set(err, -EPROTO, "%s: %s: the hub listed %llu bytes but serves "
						  "a file of %lld", h->repo, path,
						  (unsigned long long)file_size, t->cr_total);
				break;
			}
			if (cr == CURLE_FILESIZE_EXCEEDED || cr == CURLE_TOO_MANY_REDIRECTS) {
				rc = coli_err_set(err, -EPROTO, "%s: %s: %s", h->repo, path,
						  cr == CURLE_FILESIZE_EXCEEDED
						  ? "the answer announces more bytes than the range asked for"
						  : t->ebuf[0] ? t->ebuf : curl_easy_strerror(cr));
				break;
			}
			if (cr == CURLE_OK && !t->bad_status && t->r->got == t->r->len) {
				t->r = NULL;
				if (fn && fn(ctx, 1) < 0)
					rc = -ECANCELED;
				continue;
			}
			int ok_status = status == 206 || status == 200;
			if (status && !ok_status && !retryable(status)) {
				rc = status_error(h, status, what, "1 try", err);
				break;
			}
			if (ok_status && t->bad_status && !retryable(status)) {
				rc = coli_err_set(err, -EPROTO, "%s: %s: the server ignored the byte "
						  "range asked for", h->repo, path);
				break;
			}
			/* Progress resets the count: a connection that keeps moving
			 * forward is not failing. The deadline is not reset: a range
			 * that arrives a byte per try still ends. */
			int moved = t->r->got > t->start_got;
			if (moved)
				t->tries = 0;
			double tnow = coli_now_s();
			if (!t->fail_since)
				t->fail_since = tnow;
			++t->tries;
			double w = moved ? h->backoff_s : hub_backoff(h, t->tries, t->retry_after);
			int late = tnow + w - t->fail_since > h->deadline_s;
			if (t->tries >= h->max_tries || late) {
				char after[96];
				hub_tries_text(after, sizeof after, t->tries, late, tnow - t->fail_since,
					   h->deadline_s);
				if (status && !ok_status)
					rc = status_error(h, status, what, after, err);
				else
					rc = coli_err_set(err, -EIO, "%s: %s: %s (after %s)", h->repo, path,
							  t->ebuf[0] ? t->ebuf
							  : cr != CURLE_OK ? curl_easy_strerror(cr)
							  : "the answer ended before the range did",
							  after);
				break;
			}
			coli_info("%s: %s: %s at byte %llu; continuing in %.2f s", h->repo, path,
				  status && !ok_status ? "server busy or failing" : "transfer cut short",
				  (unsigned long long)(t->r->off + t->r->got), w);
			wait_until[t - x] = coli_now_s() + (w > 0 ? w : 1e-6);
		}
		if (rc < 0)
			break;
		now = coli_now_s();
		if (fn && now - last_tick >= 0.5) {
			last_tick = now;
			if (fn(ctx, 0) < 0) {
				rc = -ECANCELED;
				break;
			}
		}
		/* A slot just freed is refilled at once; otherwise wait for data
		 * (or a backoff to pass). */
		if (!finished)
			curl_multi_poll(m, NULL, 0, active ? 100 : 10, NULL);
	}
out:
	for (int k = 0; x && k < connections; k++) {
		if (x[k].c) {
			if (m)
				curl_multi_remove_handle(m, x[k].c);
			curl_easy_cleanup(x[k].c);
		}
	}
	if (rc == -ECANCELED && err && !err->msg[0])
		coli_err_set(err, -ECANCELED, "%s: interrupted", path);
	curl_slist_free_all(hdrs);
	if (m)
		curl_multi_cleanup(m);
	free(x);
	free(wait_until);
	free(url);
	return rc;
}
