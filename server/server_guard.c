/* server_guard.c - per-connection request deadlines and the connection
 * reserve: the defence against clients that hold connections open without
 * ever completing a request (slowloris).
 *
 * libmicrohttpd's own timeout only measures idle time, so a client sending
 * one header byte every few seconds keeps a connection forever; with
 * --max-connections of them nobody else is served. Two rules fix that:
 *
 *  1. Deadline. A connection has request_timeout seconds to deliver a
 *     complete request (request line, headers and body), counted from its
 *     opening, or on a kept-alive connection from the end of its previous
 *     response. A watchdog thread looks every 250 ms; a connection past its
 *     deadline gets a JSON 408 (when it never completed a request, so no
 *     answer can be confused with a reply to a request in flight) and is
 *     shut down.
 *  2. Reserve. libmicrohttpd accepts a few connections beyond
 *     --max-connections; whenever more than --max-connections are live (at
 *     each new connection and at each watchdog tick), the oldest
 *     connections that are still waiting for their first request and are
 *     older than EVICT_AGE_S are shut down until the count is back at the
 *     limit. A legitimate client sends its request within milliseconds, so
 *     the oldest waiter is the slowest; the minimum age keeps a burst of
 *     new connections from evicting a client that has just connected, and
 *     keeps evicted attackers that reconnect from evicting each other in a
 *     loop. Connections being answered and kept-alive connections between
 *     requests (their clients have completed a request) are never evicted;
 *     the deadline bounds those. So the reserve holds newcomers and
 *     connections being closed, and /health and new clients get through
 *     while slow clients come and go.
 *
 * The guard keeps its own dup() of each socket: shutdown() acts on the
 * socket, not the descriptor, and our copy cannot be closed and reused under
 * us by libmicrohttpd, so cutting a connection from another thread is
 * race-free. Threads: open/close/phase changes come from libmicrohttpd's
 * threads, the watchdog runs alone; everything is under one mutex (a few
 * list operations per request, nothing per token). */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sys/socket.h>

#include "coli_log.h"
#include "server_internal.h"
#include "util_time.h"

enum { WATCH_REQUEST = 0, WATCH_SERVING, WATCH_CUT };

struct srv_watch {
	struct srv_watch *prev, *next; /* oldest first */
	int fd;                        /* our dup of the socket */
	double since;                  /* start of the wait for the current request */
	int phase;
	int served;                    /* requests answered on this connection */
	/* the front door (server_door.c) opens the watch at accept and hands
	 * the socket to libmicrohttpd, whose connection notice adopts it */
	int orig_fd;                   /* the socket's number, to match it */
	int handed, adopted;
	double handed_at;
};

struct srv_guard {
	pthread_mutex_t lock;
	pthread_cond_t cond;           /* wakes the watchdog to stop */
	pthread_t thread;
	int started, stop;
	srv_watch *head, *tail;
	int n;                         /* connections in the list */
	int live;                      /* ... not yet cut */
	int soft_limit;
	double timeout_s;
	srv_metrics *m;
};

/* Close the connection under the guard's lock. A connection that never
 * completed a request is told why, in the API's error shape. */
static void cut(srv_watch *w, int status, const char *code, const char *msg)
{
	if (!w->served) {
		char buf[512];
		char body[320];
		int bn = snprintf(body, sizeof body,
				  "{\"error\":{\"message\":\"%s\",\"type\":\"invalid_request_error\","
				  "\"param\":null,\"code\":\"%s\"}}", msg, code);
		int n = snprintf(buf, sizeof buf,
				 "HTTP/1.1 %d %s\r\nConnection: close\r\nContent-Type: application/json\r\n"
				 "Content-Length: %d\r\n\r\n%s", status,
				 status == 408 ? "Request Timeout" : "Service Unavailable", bn, body);
		if (n > 0 && (size_t)n < sizeof buf) {
			ssize_t wr = send(w->fd, buf, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
			(void)wr;   /* best effort: the client may be gone */
		}
	}
	shutdown(w->fd, SHUT_RDWR);
	w->phase = WATCH_CUT;
}

static void cut_counted(srv_guard *g, srv_watch *w, int status, const char *code, const char *msg)
{
	cut(w, status, code, msg);
	g->live--;
}

#define EVICT_AGE_S 1.0

/* Over the limit: close the oldest connections waiting for their first
 * request for at least EVICT_AGE_S. Under the lock. */
static void evict(srv_guard *g, double t)
{
	for (srv_watch *o = g->head; o && g->live > g->soft_limit; o = o->next) {
		if (o->phase != WATCH_REQUEST || o->served || t - o->since < EVICT_AGE_S)
			continue;
		cut_counted(g, o, 503, "too_many_connections",
			    "too many connections waiting for their request; the oldest was closed");
		atomic_fetch_add_explicit(&g->m->conn_evicted, 1, memory_order_relaxed);
		coli_debug("server: connection limit reached; closed the oldest waiting one");
	}
}

#define ORPHAN_S 10.0

/* Under the lock. */
static void unlink_free(srv_guard *g, srv_watch *w)
{
	if (w->prev)
		w->prev->next = w->next;
	else
		g->head = w->next;
	if (w->next)
		w->next->prev = w->prev;
	else
		g->tail = w->prev;
	g->n--;
	if (w->phase != WATCH_CUT)
		g->live--;
	close(w->fd);
	free(w);
}

static void *watchdog(void *arg)
{
	srv_guard *g = arg;
	pthread_mutex_lock(&g->lock);
	while (!g->stop) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 250 * 1000 * 1000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&g->cond, &g->lock, &ts);
		double t = coli_now_s();
		for (srv_watch *w = g->head; w; w = w->next)
			if (w->phase == WATCH_REQUEST && t - w->since > g->timeout_s) {
				cut_counted(g, w, 408, "request_timeout",
					    "the request was not received in time (--request-timeout)");
				atomic_fetch_add_explicit(&g->m->conn_timed_out, 1, memory_order_relaxed);
				coli_debug("server: a connection did not send its request within %.0f s; closed",
					   g->timeout_s);
			}
		evict(g, t);
		/* a socket handed over that libmicrohttpd never took (it closes
		 * it when it fails inside its own thread): forget it */
		for (srv_watch *w = g->head, *nx; w; w = nx) {
			nx = w->next;
			if (w->handed && !w->adopted && t - w->handed_at > ORPHAN_S)
				unlink_free(g, w);
		}
	}
	pthread_mutex_unlock(&g->lock);
	return NULL;
}

int srv_guard_start(srv_guard **out, int soft_limit, int timeout_s, srv_metrics *m, coli_err *err)
{
	srv_guard *g = calloc(1, sizeof *g);
	*out = NULL;
	if (!g)
		return coli_err_set(err, -ENOMEM, "server: out of memory");
	pthread_mutex_init(&g->lock, NULL);
	pthread_cond_init(&g->cond, NULL);
	g->soft_limit = soft_limit;
	g->timeout_s = timeout_s;
	g->m = m;
	int rc = pthread_create(&g->thread, NULL, watchdog, g);
	if (rc) {
		srv_guard_stop(g);
		return coli_err_set(err, -rc, "server: cannot start the connection watchdog: %s",
				    strerror(rc));
	}
	g->started = 1;
	*out = g;
	return 0;
}

void srv_guard_stop(srv_guard *g)
{
	if (!g)
		return;
	if (g->started) {
		pthread_mutex_lock(&g->lock);
		g->stop = 1;
		pthread_cond_signal(&g->cond);
		pthread_mutex_unlock(&g->lock);
		pthread_join(g->thread, NULL);
	}
	for (srv_watch *w = g->head, *nx; w; w = nx) {
		nx = w->next;
		close(w->fd);
		free(w);
	}
	pthread_cond_destroy(&g->cond);
	pthread_mutex_destroy(&g->lock);
	free(g);
}

srv_watch *srv_guard_open(srv_guard *g, int fd)
{
	if (!g || fd < 0)
		return NULL;
	srv_watch *w = calloc(1, sizeof *w);
	if (!w)
		return NULL;
	w->fd = dup(fd);
	if (w->fd < 0) {
		free(w);
		return NULL;
	}
	w->orig_fd = fd;
	w->since = coli_now_s();
	pthread_mutex_lock(&g->lock);
	w->prev = g->tail;
	if (g->tail)
		g->tail->next = w;
	else
		g->head = w;
	g->tail = w;
	g->n++;
	g->live++;
	/* over the limit: make room; when nobody can be evicted, w takes a
	 * reserve slot */
	evict(g, w->since);
	pthread_mutex_unlock(&g->lock);
	return w;
}

void srv_guard_close(srv_guard *g, srv_watch *w)
{
	if (!g || !w)
		return;
	pthread_mutex_lock(&g->lock);
	unlink_free(g, w);
	pthread_mutex_unlock(&g->lock);
}

int srv_guard_count(srv_guard *g)
{
	if (!g)
		return 0;
	pthread_mutex_lock(&g->lock);
	int n = g->n;
	pthread_mutex_unlock(&g->lock);
	return n;
}

void srv_guard_handing(srv_guard *g, srv_watch *w)
{
	if (!g || !w)
		return;
	pthread_mutex_lock(&g->lock);
	w->handed = 1;
	w->handed_at = coli_now_s();
	pthread_mutex_unlock(&g->lock);
}

/* Only one socket with a given number can be waiting for adoption: it
 * stays open (in libmicrohttpd's hands) until after the adoption. */
srv_watch *srv_guard_adopt(srv_guard *g, int fd)
{
	if (!g || fd < 0)
		return NULL;
	srv_watch *found = NULL;
	pthread_mutex_lock(&g->lock);
	for (srv_watch *w = g->head; w && !found; w = w->next)
		if (w->handed && !w->adopted && w->orig_fd == fd) {
			w->adopted = 1;
			found = w;
		}
	pthread_mutex_unlock(&g->lock);
	return found ? found : srv_guard_open(g, fd);
}

void srv_guard_handoff_failed(srv_guard *g, srv_watch *w)
{
	if (!g || !w)
		return;
	pthread_mutex_lock(&g->lock);
	if (!w->adopted)   /* else libmicrohttpd's close notice frees it */
		unlink_free(g, w);
	pthread_mutex_unlock(&g->lock);
}

void srv_guard_serving(srv_guard *g, srv_watch *w)
{
	if (!g || !w)
		return;
	pthread_mutex_lock(&g->lock);
	if (w->phase == WATCH_REQUEST)
		w->phase = WATCH_SERVING;
	pthread_mutex_unlock(&g->lock);
}

void srv_guard_answered(srv_guard *g, srv_watch *w)
{
	if (!g || !w)
		return;
	pthread_mutex_lock(&g->lock);
	if (w->phase != WATCH_CUT) {
		w->phase = WATCH_REQUEST;
		w->since = coli_now_s();
	}
	w->served++;
	pthread_mutex_unlock(&g->lock);
}
