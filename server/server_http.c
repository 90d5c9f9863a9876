/* server_http.c - libmicrohttpd plumbing: daemon, routing, auth, CORS,
 * body limits.
 *
 * Threading choice: MHD's internal polling thread plus one thread per
 * connection. A connection thread may then block while the engine works
 * (non-streamed answers) or inside the streaming content callback, which
 * keeps the code straight-line; the cost is one thread per open client,
 * bounded by --max-connections plus a small reserve. Clients that never
 * complete their request are cut by the request deadline and the reserve
 * (server_guard.c), silent ones by the idle timeout, bad or oversized
 * request heads by the front door before MHD sees them (server_door.c,
 * server_head.c), oversized bodies by max_body (413, checked against Content-Length before
 * reading and against the bytes as they arrive). */
#include "config.h"

#include <errno.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <microhttpd.h>

#include "coli_log.h"
#include "server_internal.h"
#include "util_time.h"

#define DEFAULT_MAX_BODY (4u << 20)
#define CONN_MEMORY (64u << 10)   /* URL + headers must fit */
/* An oversized chunked body is read and dropped up to this much so the
 * client gets its 413 (MHD can only answer once the upload ended). */
#define DRAIN_LIMIT(max) ((max) * 4 > (64u << 20) ? (max) * 4 : (64u << 20))

void coli_server_opts_default(coli_server_opts *o)
{
	memset(o, 0, sizeof *o);
	o->host = "127.0.0.1";
	o->port = 8080;
	o->max_body = DEFAULT_MAX_BODY;
	o->timeout_s = 30;
	o->request_timeout_s = 30;
	o->shutdown_grace_ms = 5000;
	o->max_connections = 64;
}

void srv_add_cors(void *resp)
{
	struct MHD_Response *r = resp;
	MHD_add_response_header(r, "Access-Control-Allow-Origin", "*");
	MHD_add_response_header(r, "Access-Control-Expose-Headers", "Retry-After, Content-Type");
}

int srv_respond(coli_server *s, struct MHD_Connection *c, srv_conn *cc, int status,
		const char *content_type, char *body)
{
	if (!body) {
		status = 500;
		content_type = "application/json";
		body = strdup("{\"error\":{\"message\":\"out of memory\",\"type\":\"server_error\","
			      "\"param\":null,\"code\":null}}");
		if (!body)
			return MHD_NO;
	}
	struct MHD_Response *r =
		MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type", content_type);
	srv_add_cors(r);
	if (status == 503)
		MHD_add_response_header(r, "Retry-After", "1");
	if (status == 405) {
		static const char *const allow[SRV_ROUTE_COUNT] = {
			[SRV_ROUTE_MODELS] = "GET, HEAD, OPTIONS",
			[SRV_ROUTE_HEALTH] = "GET, HEAD, OPTIONS",
			[SRV_ROUTE_METRICS] = "GET, HEAD, OPTIONS",
			[SRV_ROUTE_RESPONSE_ID] = "GET, HEAD, DELETE, OPTIONS",
		};
		const char *a = cc->route >= 0 && allow[cc->route] ? allow[cc->route] : "POST, OPTIONS";
		MHD_add_response_header(r, "Allow", a);
	}
	int ret = MHD_queue_response(c, (unsigned)status, r);
	MHD_destroy_response(r);
	cc->done = 1;
	cc->status = status;
	srv_metrics_request(&s->metrics, cc->route, status);
	return ret;
}

int srv_respond_error(coli_server *s, struct MHD_Connection *c, srv_conn *cc, const srv_error *e)
{
	if (e->status >= 500 && e->status != 503)   /* 503: busy or stopping, by design */
		coli_warn("server: %d %s", e->status, e->message);
	else
		coli_debug("server: %d %s", e->status, e->message);
	char *body = cc->anthropic ? srv_anthropic_error_json(e) : srv_openai_error_json(e);
	return srv_respond(s, c, cc, e->status, "application/json", body);
}

static const struct {
	const char *path;
	int route;
	int post;
} routes[] = {
	{ "/models", SRV_ROUTE_MODELS, 0 },
	{ "/chat/completions", SRV_ROUTE_CHAT, 1 },
	{ "/completions", SRV_ROUTE_COMPLETIONS, 1 },
	{ "/messages", SRV_ROUTE_MESSAGES, 1 },
	{ "/messages/count_tokens", SRV_ROUTE_COUNT_TOKENS, 1 },
	{ "/health", SRV_ROUTE_HEALTH, 0 },
	{ "/", SRV_ROUTE_HEALTH, 0 },   /* HEAD / : clients probing the base URL */
	{ "/metrics", SRV_ROUTE_METRICS, 0 },
	{ "/responses", SRV_ROUTE_RESPONSES, 1 },
};

/* Route of a URL (with or without /v1); -1 when unknown. wants_post tells
 * the method the route takes. */
int srv_route_of(const char *url, srv_conn *cc, int *wants_post)
{
	if (!strncmp(url, "/v1/", 4))
		url += 3;
	for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++)
		if (!strcmp(url, routes[i].path)) {
			*wants_post = routes[i].post;
			return routes[i].route;
		}
	/* GET /models/ID: ids have no '/' (the OpenAI SDK's models.retrieve) */
	if (!strncmp(url, "/models/", 8) && url[8] && !strchr(url + 8, '/') &&
	    strlen(url + 8) < sizeof cc->model_path) {
		snprintf(cc->model_path, sizeof cc->model_path, "%s", url + 8);
		*wants_post = 0;
		return SRV_ROUTE_MODELS;
	}
	/* GET, DELETE /responses/ID (the id is checked by its handler) */
	if (!strncmp(url, "/responses/", 11) && url[11] && !strchr(url + 11, '/') &&
	    strlen(url + 11) < sizeof cc->resp_id) {
		snprintf(cc->resp_id, sizeof cc->resp_id, "%s", url + 11);
		*wants_post = 0;
		return SRV_ROUTE_RESPONSE_ID;
	}
	return -1;
}

/* Constant-time comparison: the key must not leak through timing. */
static int key_equal(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	unsigned char d = (unsigned char)(la != lb);
	for (size_t i = 0; i < la; i++)
		d |= (unsigned char)(a[i] ^ b[i % (lb ? lb : 1)]);
	return d == 0;
}

static int authorized(coli_server *s, struct MHD_Connection *c)
{
	if (!s->api_key)
		return 1;
	const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
	if (h && !strncasecmp(h, "Bearer ", 7)) {
		h += 7;
		while (*h == ' ')
			h++;
		if (key_equal(h, s->api_key))
			return 1;
	}
	h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "x-api-key");
	return h && key_equal(h, s->api_key);
}

static int preflight(coli_server *s, struct MHD_Connection *c, srv_conn *cc)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(0, "", MHD_RESPMEM_PERSISTENT);
	if (!r)
		return MHD_NO;
	const char *req_h = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
							"Access-Control-Request-Headers");
	srv_add_cors(r);
	MHD_add_response_header(r, "Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS");
	MHD_add_response_header(r, "Access-Control-Allow-Headers",
				req_h && strlen(req_h) < 1024 ? req_h
				: "Authorization, Content-Type, x-api-key, anthropic-version, anthropic-beta");
	MHD_add_response_header(r, "Access-Control-Max-Age", "86400");
	int ret = MHD_queue_response(c, 204, r);
	MHD_destroy_response(r);
	cc->done = 1;
	cc->status = 204;
	srv_metrics_request(&s->metrics, cc->route < 0 ? SRV_ROUTE_OTHER : cc->route, 204);
	return ret;
}

/* JSON bodies only; curl's default form type and text/plain are tolerated
 * because many scripts send JSON under them. */
static int content_type_ok(struct MHD_Connection *c)
{
	const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
	if (!ct || !*ct)
		return 1;
	return strstr(ct, "json") || !strncasecmp(ct, "text/plain", 10) ||
	       !strncasecmp(ct, "application/x-www-form-urlencoded", 33);
}

/* The framing rules of server_head.c, on the headers as MHD parsed them:
 * they also cover requests on kept-alive connections, whose heads the
 * front door does not see. */
static enum MHD_Result framing_header(void *cls, enum MHD_ValueKind kind, const char *key,
				      const char *value)
{
	(void)kind;
	if (!value)
		value = "";
	srv_framing_add(cls, key, strlen(key), value, strlen(value));
	return MHD_YES;
}

static int framing_check(struct MHD_Connection *c, srv_error *e)
{
	srv_framing f = { 0 };
	MHD_get_connection_values(c, MHD_HEADER_KIND, framing_header, &f);
	return srv_framing_check(&f, e);
}

static int hexval(int ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

/* Percent-decoding of the URL and query (in place), except %00: MHD's own
 * decoder turns it into a NUL that silently cuts the path
 * ("/health%00/../x" routed as "/health"); kept literal, such a path is
 * simply unknown (404). */
static size_t url_unescape(void *cls, struct MHD_Connection *c, char *str)
{
	(void)cls;
	(void)c;
	char *w = str;
	for (const char *r = str; *r;) {
		int hi, lo;
		if (r[0] == '%' && (hi = hexval((unsigned char)r[1])) >= 0 &&
		    (lo = hexval((unsigned char)r[2])) >= 0 && (hi | lo)) {
			*w++ = (char)(hi * 16 + lo);
			r += 3;
		} else {
			*w++ = *r++;
		}
	}
	*w = '\0';
	return (size_t)(w - str);
}

static enum MHD_Result first_call(coli_server *s, struct MHD_Connection *c, srv_conn *cc,
				  const char *url, const char *method)
{
	srv_error e = { 0 };
	int post = 0;
	cc->route = srv_route_of(url, cc, &post);
	cc->anthropic = cc->route == SRV_ROUTE_MESSAGES || cc->route == SRV_ROUTE_COUNT_TOKENS;
	if (framing_check(c, &e))
		return (enum MHD_Result)srv_respond_error(s, c, cc, &e);
	if (atomic_load(&s->draining)) {
		srv_fail(&e, 503, "server_error", "shutting_down", NULL, "the server is shutting down");
		return (enum MHD_Result)srv_respond_error(s, c, cc, &e);
	}
	if (!strcmp(method, "OPTIONS"))
		return (enum MHD_Result)preflight(s, c, cc);
	if (cc->route < 0) {
		srv_fail(&e, 404, "invalid_request_error", "unknown_url", NULL,
			 "unknown URL: %s %.200s", method, url);
		return (enum MHD_Result)srv_respond_error(s, c, cc, &e);
	}
	int is_get = !strcmp(method, "GET") || !strcmp(method, "HEAD");
	cc->is_delete = cc->route == SRV_ROUTE_RESPONSE_ID && !strcmp(method, "DELETE");
	if ((post && strcmp(method, "POST")) || (!post && !is_get && !cc->is_delete)) {
		srv_fail(&e, 405, "invalid_request_error", "method_not_allowed", NULL,
			 "method %s is not allowed on %.200s", method, url);
		return (enum MHD_Result)srv_respond_error(s, c, cc, &e);
	}
	if (cc->route != SRV_ROUTE_HEALTH && !authorized(s, c)) {
		srv_fail(&e, 401, "invalid_request_error", "invalid_api_key", NULL,
			 "missing or invalid API key (send 'Authorization: Bearer KEY' or 'x-api-key: KEY')");
		return (enum MHD_Result)srv_respond_error(s, c, cc, &e);
	}
	/* Answering in this first call would make MHD close the connection
	 * (it cannot know no body follows); GETs answer on the next call and
	 * so keep the connection alive. */
	cc->is_get = !post;
	if (!post)
		return MHD_YES;
	if (!content_type_ok(c)) {
		srv_fail(&e, 415, "invalid_request_error", "unsupported_media_type", NULL,
			 "request body must be JSON (Content-Type: application/json)");
		return (enum MHD_Result)srv_respond_error(s, c, cc, &e);
	}
	const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
	if (cl) {
		/* digits only (framing_check); an overflow saturates to ULLONG_MAX */
		unsigned long long n = strtoull(cl, NULL, 10);
		if (n > s->max_body) {
			srv_fail(&e, 413, "invalid_request_error", "request_too_large", NULL,
				 "request body exceeds %zu bytes", s->max_body);
			return (enum MHD_Result)srv_respond_error(s, c, cc, &e);
		}
	}
	return MHD_YES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_size, void **con_cls)
{
	coli_server *s = cls;
	srv_conn *cc = *con_cls;
	(void)version;
	if (!cc) {
		cc = calloc(1, sizeof *cc);
		if (!cc)
			return MHD_NO;
		*con_cls = cc;
		atomic_fetch_add(&s->open_reqs, 1);
		const union MHD_ConnectionInfo *ci =
			MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
		cc->watch = ci ? ci->socket_context : NULL;
		cc->t0 = coli_now_s();
		snprintf(cc->method, sizeof cc->method, "%s", method);
		snprintf(cc->url, sizeof cc->url, "%s", url);
		return first_call(s, c, cc, url, method);
	}
	if (cc->done) {
		*upload_size = 0;
		return MHD_YES;
	}
	if (*upload_size) {
		size_t n = *upload_size;
		*upload_size = 0;
		if (!cc->too_big && cc->body.len + n > s->max_body) {
			cc->too_big = 1;
			util_buf_free(&cc->body);
		}
		if (cc->too_big) {
			/* Chunked bodies have no length to refuse up front: drain a
			 * bounded amount so the client reads our 413, then hang up. */
			cc->discarded += n;
			return cc->discarded > DRAIN_LIMIT(s->max_body) ? MHD_NO : MHD_YES;
		}
		if (util_buf_add(&cc->body, upload, n))
			return MHD_NO;
		return MHD_YES;
	}
	srv_guard_serving(s->guard, cc->watch);
	if (atomic_load(&s->stopping)) {
		srv_error e;
		srv_fail(&e, 503, "server_error", "shutting_down", NULL, "the server is shutting down");
		return (enum MHD_Result)srv_respond_error(s, c, cc, &e);
	}
	if (cc->too_big) {
		srv_error e;
		srv_fail(&e, 413, "invalid_request_error", "request_too_large", NULL,
			 "request body exceeds %zu bytes", s->max_body);
		return (enum MHD_Result)srv_respond_error(s, c, cc, &e);
	}
	if (cc->is_get)
		return (enum MHD_Result)srv_handle_get(s, c, cc);
	return (enum MHD_Result)srv_handle_post(s, c, cc);
}

/* The host's request event: who asked what, the answer and its cost. */
static void report(coli_server *s, struct MHD_Connection *c, const srv_conn *cc, int completed)
{
	char host[NI_MAXHOST] = "?", serv[NI_MAXSERV] = "?", client[NI_MAXHOST + NI_MAXSERV + 4];
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	const struct sockaddr *sa = ci ? ci->client_addr : NULL;
	if (sa)
		getnameinfo(sa, sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in),
			    host, sizeof host, serv, sizeof serv, NI_NUMERICHOST | NI_NUMERICSERV);
	int v6 = strchr(host, ':') != NULL;
	snprintf(client, sizeof client, "%s%s%s:%s", v6 ? "[" : "", host, v6 ? "]" : "", serv);
	coli_server_event ev = {
		.client = client, .method = cc->method, .url = cc->url, .status = cc->status,
		.completed = completed, .prompt_tokens = cc->usage.prompt,
		.completion_tokens = cc->usage.completion,
		.seconds = coli_now_s() - cc->t0,
	};
	s->on_event(s->event_opaque, &ev);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	coli_server *s = cls;
	srv_conn *cc = *con_cls;
	if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK)
		coli_debug("server: request ended early (code %d)", (int)toe);
	if (cc && s->on_event)
		report(s, c, cc, toe == MHD_REQUEST_TERMINATED_COMPLETED_OK);
	if (cc) {
		srv_guard_answered(s->guard, cc->watch);
		util_buf_free(&cc->body);
		free(cc);
		atomic_fetch_sub(&s->open_reqs, 1);
	}
	*con_cls = NULL;
}

/* Connections (not requests): the guard watches each from accept to close. */
static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
			  enum MHD_ConnectionNotificationCode toe)
{
	coli_server *s = cls;
	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci =
			MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
		*socket_context = srv_guard_adopt(s->guard, ci ? ci->connect_fd : -1);
	} else if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
		srv_guard_close(s->guard, *socket_context);
		*socket_context = NULL;
	}
}

/* Connections accepted beyond --max-connections, each of which evicts the
 * oldest connection still waiting for its request (server_guard.c). */
static unsigned conn_reserve(int max_connections)
{
	return (unsigned)(max_connections / 8 + 4);
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
	(void)cls;
	char line[512];
	vsnprintf(line, sizeof line, fmt, ap);
	size_t n = strlen(line);
	while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
		line[--n] = '\0';
	coli_debug("server: libmicrohttpd: %s", line);
}

static void model_names(coli_server *s, const coli_server_opts *o)
{
	const char *name = coli_engine_model_name(s->eng);
	snprintf(s->model_id, sizeof s->model_id, "%s", name && *name ? name : "default");
	if (o->model_dir) {
		const char *b = o->model_dir + strlen(o->model_dir);
		while (b > o->model_dir && b[-1] == '/')
			b--;
		const char *a = b;
		while (a > o->model_dir && a[-1] != '/')
			a--;
		snprintf(s->model_alias, sizeof s->model_alias, "%.*s", (int)(b - a), a);
	}
	s->any_model = o->any_model;
	int n = 0;
	while (o->aliases && o->aliases[n])
		n++;
	s->aliases = calloc((size_t)n + 1, sizeof *s->aliases);
	for (int i = 0, k = 0; s->aliases && i < n; i++) {
		if (!strcmp(o->aliases[i], "*"))
			s->any_model = 1;
		else if ((s->aliases[k] = strdup(o->aliases[i])))
			k++;
	}
}

int coli_server_new_offline(coli_engine *eng, const coli_server_opts *o, coli_server **out,
			    coli_err *err)
{
	coli_server_opts def;
	if (!o) {
		coli_server_opts_default(&def);
		o = &def;
	}
	*out = NULL;
	coli_server *s = calloc(1, sizeof *s);
	if (!s)
		return coli_err_set(err, -ENOMEM, "server: out of memory");
	s->eng = eng;
	s->max_body = o->max_body ? o->max_body : DEFAULT_MAX_BODY;
	s->timeout_s = o->timeout_s > 0 ? o->timeout_s : 30;
	s->max_connections = o->max_connections > 0 ? o->max_connections : 64;
	s->grace_ms = o->shutdown_grace_ms > 0 ? o->shutdown_grace_ms : 0;
	s->request_timeout_s = o->request_timeout_s > 0 ? o->request_timeout_s : 30;
	s->ignore_eos = o->ignore_eos;
	s->xstats = o->expert_stats ? o->expert_stats : coli_engine_expert_stats(eng);
	s->on_event = o->on_event;
	s->event_opaque = o->event_opaque;
	s->started = (long long)time(NULL);
	if (o->api_key && *o->api_key && !(s->api_key = strdup(o->api_key))) {
		free(s);
		return coli_err_set(err, -ENOMEM, "server: out of memory");
	}
	model_names(s, o);
	const coli_config *cfg = coli_engine_config(eng);
	coli_err terr = { 0 };
	s->tpl_ok = coli_chat_template_detect(coli_engine_tokenizer(eng), cfg ? cfg->model_type : NULL,
					      &s->tpl, &terr) == 0;
	if (!s->tpl_ok) {
		snprintf(s->tpl_err, sizeof s->tpl_err, "%s", terr.msg);
		coli_warn("server: no chat template (%s); /v1/chat/completions and /v1/messages "
			  "will answer 500, /v1/completions works", terr.msg);
	}
	*out = s;
	return 0;
}

void coli_server_interrupt(coli_server *s)
{
	if (s)
		atomic_store(&s->stopping, 1);
}

int coli_server_start(coli_engine *eng, const coli_server_opts *o, coli_server **out,
		      coli_err *err)
{
	coli_server_opts def;
	if (!o) {
		coli_server_opts_default(&def);
		o = &def;
	}
	coli_server *s = NULL;
	int src = coli_server_new_offline(eng, o, &s, err);
	if (src)
		return src;

	int grc0 = srv_guard_start(&s->guard, s->max_connections, s->request_timeout_s, &s->metrics, err);
	if (grc0) {
		coli_server_stop(s);
		return grc0;
	}
	const char *host = o->host && *o->host ? o->host : "127.0.0.1";
	char port[16];
	snprintf(port, sizeof port, "%d", o->port);
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE | AI_NUMERICSERV };
	struct addrinfo *ai = NULL;
	int grc = getaddrinfo(host, port, &hints, &ai);
	if (grc || !ai) {
		int rc = coli_err_set(err, -EINVAL, "--host %s: %s", host, gai_strerror(grc));
		coli_server_stop(s);
		return rc;
	}
	/* No listening socket: the front door (server_door.c) accepts, checks
	 * each request head and hands valid ones over (MHD_add_connection,
	 * which needs the ITC to wake MHD's thread). */
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
			 MHD_USE_ERROR_LOG | MHD_USE_ITC | MHD_USE_NO_LISTEN_SOCKET;
	int limit = s->max_connections + (int)conn_reserve(s->max_connections);
	s->d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, s,
				MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)s->timeout_s,
				/* the door keeps the limit; MHD's own only needs
				 * room for connections whose close it has not yet
				 * counted */
				MHD_OPTION_CONNECTION_LIMIT, (unsigned)limit + 16,
				MHD_OPTION_NOTIFY_CONNECTION, on_connection, s,
				MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CONN_MEMORY,
				MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
				MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, s,
				MHD_OPTION_UNESCAPE_CALLBACK, url_unescape, s,
				MHD_OPTION_END);
	if (!s->d) {
		int e = errno ? errno : ENOMEM;
		int rc = coli_err_set(err, -e, "server: cannot start libmicrohttpd: %s", strerror(e));
		freeaddrinfo(ai);
		coli_server_stop(s);
		return rc;
	}
	char what[300];
	snprintf(what, sizeof what, "%s:%d", host, o->port);
	int drc = srv_door_start(&s->door, s, ai->ai_addr, ai->ai_addrlen, limit, what, err);
	freeaddrinfo(ai);
	if (drc) {
		coli_server_stop(s);
		return drc;
	}
	s->port = srv_door_port(s->door);
	coli_info("server: listening on http://%s%s%s:%d/v1 (model %s)",
		  strchr(host, ':') ? "[" : "", host, strchr(host, ':') ? "]" : "", s->port,
		  s->model_id);
	*out = s;
	return 0;
}

int coli_server_port(const coli_server *s)
{
	return s ? s->port : -1;
}

/* Stop accepting connections; new requests on open connections answer 503
 * (/health included, so balancers move away). Idempotent; coli_server_stop
 * does it too. */
static void coli_server_quiesce(coli_server *s)
{
	if (!s || atomic_exchange(&s->draining, 1))
		return;
	/* new connections are refused at once instead of left in the backlog */
	srv_door_close(s->door);
}

/* Wait until no request is open or the deadline passes; 1 when drained. */
static int wait_drained(coli_server *s, double until)
{
	while (atomic_load(&s->open_reqs) > 0) {
		if (coli_now_s() >= until)
			return 0;
		struct timespec ts = { 0, 20 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	return 1;
}

/* Time the stopped requests get to write their last event or their 503:
 * the engine stops them within a step, a connection thread notices within
 * its poll period, a client that does not read is cut after this. */
#define FLUSH_S 10.0

void coli_server_stop(coli_server *s)
{
	if (!s)
		return;
	if (s->d) {
		coli_server_quiesce(s);
		int n = atomic_load(&s->open_reqs);
		if (n > 0)
			coli_info("server: draining %d request(s), up to %.1f s", n, s->grace_ms / 1000.0);
		if (!wait_drained(s, coli_now_s() + s->grace_ms / 1000.0)) {
			coli_info("server: grace period over; stopping %d request(s)",
				  atomic_load(&s->open_reqs));
			atomic_store(&s->stopping, 1);
			if (!wait_drained(s, coli_now_s() + FLUSH_S))
				coli_warn("server: %d request(s) still open after %.0f s; closing them",
					  atomic_load(&s->open_reqs), FLUSH_S);
		}
		atomic_store(&s->stopping, 1);
	}
	/* the door first: nothing is handed to a stopped daemon */
	srv_door_stop(s->door);
	if (s->d)
		MHD_stop_daemon(s->d);
	srv_guard_stop(s->guard);
	free(s->api_key);
	for (int i = 0; s->aliases && s->aliases[i]; i++)
		free(s->aliases[i]);
	free(s->aliases);
	free(s);
}
