/* server_responses_store.c - stored responses (store: true, the default as
 * at OpenAI) and GET / DELETE /v1/responses/ID.
 *
 * A stored response is two files in the engine's session directory
 * (CACHE_DIR/kv, colitop-kv(5)): resp_ID.kv, the KV session its generation
 * ran in (prompt and answer), and resp_ID.resp.json, its record (the
 * response object and the conversation up to it). Both live and die
 * together: `coli sessions` lists the pair as one session, its size counts
 * the record, gc evicts them together, DELETE removes both, and a restart
 * finds them where they were.
 *
 * A request naming it as previous_response_id continues a copy of its
 * session (a fresh resp_ID of its own), so the stored prompt and answer are
 * not evaluated again and the earlier response stays as it was for other
 * continuations. The ids carry 128 random bits; no route lists them, and
 * "resp_" sessions are never offered to another request's prompt cache
 * (kv_store_name_private). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <microhttpd.h>

#include "coli_log.h"
#include "kv_cache_dir.h"
#include "kv_store.h"
#include "server_responses.h"

int srv_resp_new_id(char *out, size_t cap)
{
	unsigned char b[16];
	size_t got = 0;
	while (got < sizeof b) {
		ssize_t n = getrandom(b + got, sizeof b - got, 0);
		if (n > 0)
			got += (size_t)n;
		else if (errno != EINTR)
			return -errno; /* never a guessable id instead */
	}
	char hex[33];
	for (int i = 0; i < 16; i++)
		snprintf(hex + 2 * i, 3, "%02x", b[i]);
	snprintf(out, cap, KV_STORE_PRIVATE_PREFIX "%s", hex);
	return 0;
}

/* The record: {"version":1, "response":{the object}, "conversation":[the
 * input items then the output items], "session":"resp_ID"}. */
#define RECORD_VERSION 1

/* After a rename or link in dir: make the new name durable. */
static void dir_sync(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return;
	if (fsync(fd) < 0)
		coli_warn("%s: fsync: %s", dir, strerror(errno));
	close(fd);
}

static int id_valid(const char *id)
{
	if (strlen(id) != SRV_RESP_ID_LEN || strncmp(id, KV_STORE_PRIVATE_PREFIX, 5))
		return 0;
	return strspn(id + 5, "0123456789abcdef") == 32;
}

static void kv_dir(coli_server *s, char *out, size_t cap)
{
	snprintf(out, cap, "%s/kv", coli_engine_cache_dir(s->eng));
}

static int not_found(srv_error *e, const char *id)
{
	return srv_fail(e, 404, "invalid_request_error", NULL, NULL, "Response with id '%.80s' not found.", id);
}

int srv_resp_load(coli_server *s, const char *id, json_t **rec, srv_error *e)
{
	char dir[PATH_MAX], path[PATH_MAX];
	*rec = NULL;
	kv_dir(s, dir, sizeof dir);
	if (!id_valid(id) || kv_store_path(dir, id, "resp.json", path, sizeof path, NULL) < 0) {
		not_found(e, id);
		return -ENOENT;
	}
	json_error_t jerr;
	json_t *j = json_load_file(path, 0, &jerr);
	if (!j) {
		if (access(path, F_OK) < 0) {
			not_found(e, id);
			return -ENOENT;
		}
		return srv_fail(e, 500, "server_error", NULL, NULL, "stored response %s is unreadable: %s", id,
				jerr.text);
	}
	json_t *v = json_object_get(j, "version");
	if (!json_is_integer(v) || json_integer_value(v) != RECORD_VERSION) {
		/* a later format is refused, never guessed at */
		json_decref(j);
		return srv_fail(e, 500, "server_error", NULL, NULL,
				"stored response %s has record version %lld; this server reads %d", id,
				json_is_integer(v) ? (long long)json_integer_value(v) : -1LL, RECORD_VERSION);
	}
	if (!json_is_object(json_object_get(j, "response")) || !json_is_array(json_object_get(j, "conversation"))) {
		json_decref(j);
		return srv_fail(e, 500, "server_error", NULL, NULL, "stored response %s is damaged", id);
	}
	*rec = j;
	return 0;
}

static int copy_fd(int in, int out)
{
	char buf[1 << 16];
	for (;;) {
		ssize_t n = copy_file_range(in, NULL, out, NULL, 1 << 30, 0);
		if (n == 0)
			return 0;
		if (n > 0)
			continue;
		if (errno != EXDEV && errno != ENOSYS && errno != EINVAL && errno != EOPNOTSUPP)
			return -errno;
		break;
	}
	/* no copy_file_range between these files: a plain copy */
	for (;;) {
		ssize_t n = read(in, buf, sizeof buf);
		if (n == 0)
			return 0;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		for (ssize_t w = 0; w < n;) {
			ssize_t k = write(out, buf + w, (size_t)(n - w));
			if (k < 0 && errno != EINTR)
				return -errno;
			w += k > 0 ? k : 0;
		}
	}
}

int srv_resp_session_fork(coli_server *s, const char *from, const char *to, srv_error *e)
{
	char dir[PATH_MAX], src[PATH_MAX], dst[PATH_MAX], tmp[PATH_MAX + 32];
	coli_err err = { 0 };
	int lock = -1, in = -1, out = -1, rc;
	kv_dir(s, dir, sizeof dir);
	if (kv_store_path(dir, from, "kv", src, sizeof src, NULL) < 0 ||
	    kv_store_path(dir, to, "kv", dst, sizeof dst, NULL) < 0 ||
	    snprintf(tmp, sizeof tmp, "%s/.%s.kv.tmp.%ld", dir, to, (long)getpid()) >= (int)sizeof tmp)
		return srv_fail(e, 500, "server_error", NULL, NULL, "session path too long");
	/* the stored session is complete once its response is: the engine
	 * saved it before the last event, and nothing writes it again */
	if ((in = open(src, O_RDONLY | O_CLOEXEC)) < 0)
		return -ENOENT;
	/* under the new name's lock, so a gc never takes the half-copied file */
	if ((rc = kv_store_lock(dir, to, &lock, &err)) < 0)
		goto out;
	if ((out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) < 0) {
		rc = -errno;
		goto out;
	}
	if ((rc = copy_fd(in, out)) == 0 && fsync(out) < 0)
		rc = -errno;
	if (close(out) < 0 && !rc)
		rc = -errno;
	out = -1;
	if (!rc && link(tmp, dst) < 0)
		rc = -errno;
	unlink(tmp);
	if (!rc)
		dir_sync(dir);
out:
	if (in >= 0)
		close(in);
	kv_store_unlock(lock);
	if (rc < 0 && rc != -ENOENT)
		return srv_fail(e, rc == -ENOSPC ? 507 : 500, "server_error", NULL, NULL,
				"cannot copy the stored session %s: %s", from, err.msg[0] ? err.msg : strerror(-rc));
	return rc;
}

/* The items a later request continues from: the conversation, then this
 * response's output. */
static json_t *conversation(const srv_resp *q, json_t *object)
{
	json_t *c = json_deep_copy(q->items);
	json_t *out = json_object_get(object, "output");
	if (c && json_is_array(out))
		json_array_extend(c, out);
	return c;
}

int srv_resp_save(coli_server *s, const srv_resp *q, json_t *object)
{
	char dir[PATH_MAX], path[PATH_MAX], tmp[PATH_MAX + 32];
	kv_dir(s, dir, sizeof dir);
	if (kv_store_path(dir, q->id, "resp.json", path, sizeof path, NULL) < 0 ||
	    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof tmp)
		return -ENAMETOOLONG;
	json_t *rec = json_pack("{s:i, s:O, s:o, s:s}", "version", RECORD_VERSION, "response", object, "conversation",
				conversation(q, object), "session", q->id);
	int rc = rec ? 0 : -ENOMEM;
	if (!rc && json_dump_file(rec, tmp, JSON_COMPACT) < 0)
		rc = -EIO;
	json_decref(rec);
	int fd = rc ? -1 : open(tmp, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		if (fsync(fd) < 0)
			rc = -errno;
		close(fd);
	}
	if (!rc && rename(tmp, path) < 0)
		rc = -errno;
	if (!rc)
		dir_sync(dir);
	if (rc) {
		unlink(tmp);
		coli_warn("server: response %s not stored: %s", q->id, strerror(-rc));
	}
	return rc;
}

void srv_resp_drop(coli_server *s, const char *id)
{
	char dir[PATH_MAX], path[PATH_MAX];
	coli_err err = { 0 };
	kv_dir(s, dir, sizeof dir);
	if (kv_store_path(dir, id, "resp.json", path, sizeof path, NULL) == 0)
		unlink(path);
	int rc = kv_store_rm(dir, id, &err);
	/* still bound to an idle slot of the engine, which holds its lock
	 * until the slot serves another request: the name goes now (the
	 * record went first, so nothing can name it again), the space when
	 * the engine closes the file */
	if (rc == -EBUSY && kv_store_path(dir, id, "kv", path, sizeof path, NULL) == 0) {
		rc = unlink(path) < 0 ? -errno : 0;
		if (!rc)
			kv_store_rm_companions(dir, id);
		if (kv_store_path(dir, id, "lock", path, sizeof path, NULL) == 0)
			unlink(path);
	}
	if (rc && rc != -ENOENT)
		coli_warn("server: session of response %s not removed: %s", id, err.msg[0] ? err.msg : strerror(-rc));
}

int srv_responses_get(coli_server *s, struct MHD_Connection *c, srv_conn *cc)
{
	srv_error e = { 0 };
	json_t *rec;
	if (srv_resp_load(s, cc->resp_id, &rec, &e))
		return srv_respond_error(s, c, cc, &e);
	char *body;
	if (cc->is_delete) {
		srv_resp_drop(s, cc->resp_id);
		json_t *j = json_pack("{s:s, s:s, s:b}", "id", cc->resp_id, "object", "response", "deleted", 1);
		body = j ? json_dumps(j, JSON_COMPACT) : NULL;
		json_decref(j);
	} else {
		body = json_dumps(json_object_get(rec, "response"), JSON_COMPACT);
	}
	json_decref(rec);
	return srv_respond(s, c, cc, 200, "application/json", body);
}
