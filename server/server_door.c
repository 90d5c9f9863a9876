/* server_door.c - the front door: the server's own listening socket, and
 * a check of each new connection's request head before libmicrohttpd
 * takes the connection.
 *
 * libmicrohttpd answers a head it cannot parse with an HTML page and has no
 * hook to change it (server_head.c lists what it does). So the daemon runs
 * without a listening socket (MHD_USE_NO_LISTEN_SOCKET) and one thread here
 * accepts, and for each new connection looks at the bytes that arrive
 * (recv with MSG_PEEK: nothing is consumed) until the head is complete.
 * A valid head hands the socket to MHD (MHD_add_connection), which then
 * reads the same bytes; a bad one is answered here in the API's JSON error
 * shape with Connection: close and never reaches MHD.
 *
 * Nothing here waits on one client: all connections still sending their
 * head are in one poll() set with the listening socket. While a head is
 * incomplete, SO_RCVLOWAT is set to one byte more than has arrived, so
 * poll() wakes when more comes rather than at once (the peeked bytes stay
 * readable); where the option is refused, the connection is looked at
 * again every POLL_RETRY_MS.
 *
 * The rules of server_guard.c still hold from accept on: the guard watches
 * every connection here too (its request deadline sends the 408, its
 * eviction the 503, both by shutting the socket down, which poll() sees),
 * and the total of connections never exceeds --max-connections plus the
 * reserve: at that count the listening socket is not polled and new
 * clients wait in the backlog, as they did with MHD's own limit. An idle
 * connection (no byte for --timeout) is closed without a word, as MHD
 * does.
 *
 * After an error answer, the socket is shut for writing and read (and
 * dropped) for up to LINGER_S: closing with unread input would reset the
 * connection and could destroy the answer before the client reads it.
 *
 * What this cannot see: the next request on a kept-alive connection, and
 * a chunked body, are read by MHD alone (the handler still applies the
 * framing rules to every request it sees); coli-serve(1) BUGS. */
#include "config.h"

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <microhttpd.h>

#include "coli_log.h"
#include "server_internal.h"
#include "util_time.h"

#define POLL_TICK_MS 250
#define POLL_RETRY_MS 20
#define LINGER_S 2.0
#define LINGER_BYTES (1u << 20)

typedef struct door_conn {
	int fd;
	srv_watch *w;              /* NULL once answered here (lingering) */
	struct sockaddr_storage addr;
	socklen_t alen;
	double t_open, t_progress;
	size_t seen;               /* bytes peeked so far */
	int lowat;                 /* SO_RCVLOWAT in use */
	int linger;                /* answered; draining until close */
	double linger_until;
	size_t drained;
} door_conn;

struct srv_door {
	coli_server *s;
	int lfd;                   /* the listening socket; -1 once closed */
	int wake[2];               /* a byte here wakes the thread */
	pthread_t thread;
	int started;
	atomic_int stop, closing;
	int limit;                 /* connections at most (watched + lingering) */
	int cap;                   /* size of conns and pfd */
	door_conn *conns;
	int n;
	struct pollfd *pfd;
	char buf[SRV_HEAD_MAX + 1];
};

static void drop(srv_door *d, int i)
{
	door_conn *c = &d->conns[i];
	if (c->w)
		srv_guard_close(d->s->guard, c->w);
	close(c->fd);
	d->conns[i] = d->conns[--d->n];
}

static void set_lowat(door_conn *c, int bytes)
{
	c->lowat = setsockopt(c->fd, SOL_SOCKET, SO_RCVLOWAT, &bytes, sizeof bytes) == 0;
}

/* The access log and the metrics learn of requests answered here too. */
static void report(srv_door *d, const door_conn *c, const srv_head *h, int status)
{
	coli_server *s = d->s;
	srv_metrics_request(&s->metrics, SRV_ROUTE_OTHER, status);
	if (!s->on_event)
		return;
	char host[NI_MAXHOST] = "?", serv[NI_MAXSERV] = "?", client[NI_MAXHOST + NI_MAXSERV + 4];
	getnameinfo((const struct sockaddr *)&c->addr, c->alen, host, sizeof host, serv, sizeof serv,
		    NI_NUMERICHOST | NI_NUMERICSERV);
	int v6 = strchr(host, ':') != NULL;
	snprintf(client, sizeof client, "%s%s%s:%s", v6 ? "[" : "", host, v6 ? "]" : "", serv);
	coli_server_event ev = {
		.client = client, .method = h->method[0] ? h->method : "-", .url = h->path,
		.status = status, .completed = 1, .seconds = coli_now_s() - c->t_open,
	};
	s->on_event(s->event_opaque, &ev);
}

static const char *reason(int status)
{
	switch (status) {
	case 400: return "Bad Request";
	case 413: return "Content Too Large";
	case 414: return "URI Too Long";
	case 431: return "Request Header Fields Too Large";
	case 505: return "HTTP Version Not Supported";
	default: return "Error";
	}
}

/* Answer a bad head in the API's error shape, then linger. */
static void answer(srv_door *d, door_conn *c, const srv_head *h, const srv_error *e)
{
	/* out of the guard first, so its deadline cannot add a 408 */
	srv_guard_close(d->s->guard, c->w);
	c->w = NULL;
	coli_debug("server: %d %s", e->status, e->message);
	char *body = srv_head_anthropic(h) ? srv_anthropic_error_json(e) : srv_openai_error_json(e);
	const char *text = body ? body
		: "{\"error\":{\"message\":\"bad request\",\"type\":\"invalid_request_error\","
		  "\"param\":null,\"code\":null}}";
	char head[320];
	int hn = snprintf(head, sizeof head,
			  "HTTP/1.1 %d %s\r\nConnection: close\r\nContent-Type: application/json\r\n"
			  "Access-Control-Allow-Origin: *\r\nContent-Length: %zu\r\n\r\n",
			  e->status, reason(e->status), strlen(text));
	/* non-blocking and best effort: an answer of a few hundred bytes fits
	 * any socket buffer; a client that is gone loses nothing */
	ssize_t wr = send(c->fd, head, (size_t)hn, MSG_NOSIGNAL | MSG_DONTWAIT | MSG_MORE);
	if (wr == hn)
		wr = send(c->fd, text, strlen(text), MSG_NOSIGNAL | MSG_DONTWAIT);
	(void)wr;
	free(body);
	report(d, c, h, e->status);
	shutdown(c->fd, SHUT_WR);
	set_lowat(c, 1);
	c->linger = 1;
	c->linger_until = coli_now_s() + LINGER_S;
}

/* The head is valid: libmicrohttpd takes the socket (and closes it, even
 * when it fails). */
static void hand_over(srv_door *d, int i)
{
	door_conn *c = &d->conns[i];
	int one = 1;
	setsockopt(c->fd, SOL_SOCKET, SO_RCVLOWAT, &one, sizeof one);
	srv_guard_handing(d->s->guard, c->w);
	if (MHD_add_connection(d->s->d, c->fd, (const struct sockaddr *)&c->addr, c->alen) != MHD_YES) {
		coli_debug("server: libmicrohttpd refused a connection: %s", strerror(errno));
		srv_guard_handoff_failed(d->s->guard, c->w);
	}
	d->conns[i] = d->conns[--d->n];
}

/* Something arrived (or the socket was shut down): look again. Returns 1
 * when conns[i] left the array. */
static int step(srv_door *d, int i, double t, int hup)
{
	door_conn *c = &d->conns[i];
	if (c->linger) {
		ssize_t r = recv(c->fd, d->buf, sizeof d->buf, MSG_DONTWAIT);
		if (r > 0)
			c->drained += (size_t)r;
		if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR) || c->drained > LINGER_BYTES ||
		    t > c->linger_until) {
			drop(d, i);
			return 1;
		}
		return 0;
	}
	ssize_t r = recv(c->fd, d->buf, sizeof d->buf, MSG_PEEK | MSG_DONTWAIT);
	if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
		drop(d, i);   /* the client left, or the guard cut it */
		return 1;
	}
	if (r < 0)
		return 0;
	if ((size_t)r > c->seen) {
		c->seen = (size_t)r;
		c->t_progress = t;
	}
	srv_head h;
	srv_error e = { 0 };
	int rc = srv_head_check(d->buf, (size_t)r, d->s->max_body, &h, &e);
	if (rc > 0) {
		hand_over(d, i);
		return 1;
	}
	if (rc < 0) {
		answer(d, c, &h, &e);
	} else if (hup) {
		/* the rest can never come: the client shut its side, or the
		 * guard cut the connection (its buffered bytes stay readable
		 * after a shutdown, so the peek alone would not tell) */
		drop(d, i);
		return 1;
	} else {
		set_lowat(c, (int)r + 1);
	}
	return 0;
}

/* Room for one more connection: the guard watches all of them but those
 * answered here, which linger. */
static int has_room(const srv_door *d)
{
	int lingering = 0;
	for (int i = 0; i < d->n; i++)
		lingering += d->conns[i].linger;
	return d->n < d->cap && lingering + srv_guard_count(d->s->guard) < d->limit;
}

static void accept_some(srv_door *d, double t)
{
	while (has_room(d)) {
		door_conn c = { .fd = -1 };
		c.alen = sizeof c.addr;
		c.fd = accept4(d->lfd, (struct sockaddr *)&c.addr, &c.alen, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (c.fd < 0) {
			if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
				coli_debug("server: accept: %s", strerror(errno));
			return;
		}
		c.w = srv_guard_open(d->s->guard, c.fd);
		c.t_open = c.t_progress = t;
		set_lowat(&c, 1);
		d->conns[d->n++] = c;
	}
}

static void *door_main(void *arg)
{
	srv_door *d = arg;
	while (!atomic_load(&d->stop)) {
		int np = 0, timeout = POLL_TICK_MS;
		d->pfd[np++] = (struct pollfd){ .fd = d->wake[0], .events = POLLIN };
		int lidx = -1;
		if (!atomic_load(&d->closing) && has_room(d)) {
			lidx = np;
			d->pfd[np++] = (struct pollfd){ .fd = d->lfd, .events = POLLIN };
		}
		for (int i = 0; i < d->n; i++) {
			door_conn *c = &d->conns[i];
			d->pfd[np++] = (struct pollfd){ .fd = c->fd,
							.events = POLLRDHUP | (c->lowat ? POLLIN : 0) };
			if (!c->lowat)
				timeout = POLL_RETRY_MS;
		}
		int pr = poll(d->pfd, (nfds_t)np, timeout);
		if (pr < 0 && errno != EINTR) {
			coli_warn("server: poll: %s", strerror(errno));
			struct timespec ts = { 0, POLL_RETRY_MS * 1000000L };
			nanosleep(&ts, NULL);
			continue;
		}
		double t = coli_now_s();
		if (pr > 0 && (d->pfd[0].revents & POLLIN)) {
			char junk[64];
			ssize_t r = read(d->wake[0], junk, sizeof junk);
			(void)r;
		}
		/* connections, newest first so removal keeps the indices below
		 * valid; the poll entry of conns[i] is pfd[base + i] */
		int base = lidx >= 0 ? 2 : 1, n0 = d->n;
		for (int i = n0 - 1; i >= 0; i--) {
			door_conn *c = &d->conns[i];
			int ev = pr > 0 ? d->pfd[base + i].revents : 0;
			if (ev || !c->lowat || (c->linger && t > c->linger_until)) {
				if (step(d, i, t, (ev & (POLLRDHUP | POLLHUP | POLLERR)) != 0))
					continue;
			}
			c = &d->conns[i];
			if (!c->linger && t - c->t_progress > d->s->timeout_s)
				drop(d, i);   /* idle: silent, as libmicrohttpd's timeout */
		}
		if (lidx >= 0 && pr > 0 && (d->pfd[lidx].revents & POLLIN))
			accept_some(d, t);
	}
	return NULL;
}

int srv_door_start(srv_door **out, coli_server *s, const struct sockaddr *sa, socklen_t salen,
		   int limit, const char *what, coli_err *err)
{
	*out = NULL;
	srv_door *d = calloc(1, sizeof *d);
	if (!d)
		return coli_err_set(err, -ENOMEM, "server: out of memory");
	d->s = s;
	d->lfd = d->wake[0] = d->wake[1] = -1;
	d->limit = limit;
	d->cap = limit;
	d->conns = calloc((size_t)d->cap, sizeof *d->conns);
	d->pfd = calloc((size_t)d->cap + 2, sizeof *d->pfd);
	int rc;
	if (!d->conns || !d->pfd || pipe2(d->wake, O_NONBLOCK | O_CLOEXEC)) {
		rc = coli_err_set(err, -ENOMEM, "server: out of memory");
		goto fail;
	}
	d->lfd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int one = 1;
	if (d->lfd < 0 || setsockopt(d->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) ||
	    (sa->sa_family == AF_INET6 &&
	     setsockopt(d->lfd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one)) ||
	    bind(d->lfd, sa, salen) || listen(d->lfd, SOMAXCONN)) {
		int e = errno;
		rc = coli_err_set(err, -e, "cannot listen on %s: %s", what, strerror(e));
		goto fail;
	}
	if ((rc = pthread_create(&d->thread, NULL, door_main, d))) {
		rc = coli_err_set(err, -rc, "server: cannot start the accept thread: %s", strerror(rc));
		goto fail;
	}
	d->started = 1;
	*out = d;
	return 0;
fail:
	srv_door_stop(d);
	return rc;
}

int srv_door_port(const srv_door *d)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof ss;
	if (!d || d->lfd < 0 || getsockname(d->lfd, (struct sockaddr *)&ss, &len))
		return -1;
	if (ss.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	return ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

static void wake(srv_door *d)
{
	ssize_t r = write(d->wake[1], "w", 1);
	(void)r;   /* a full pipe already wakes the thread */
}

void srv_door_close(srv_door *d)
{
	if (!d || atomic_exchange(&d->closing, 1))
		return;
	/* refuses new connections at once (the thread stops polling the
	 * socket, srv_door_stop closes it); connections already accepted are
	 * still served */
	shutdown(d->lfd, SHUT_RDWR);
	wake(d);
}

void srv_door_stop(srv_door *d)
{
	if (!d)
		return;
	if (d->started) {
		atomic_store(&d->stop, 1);
		wake(d);
		pthread_join(d->thread, NULL);
	}
	while (d->n > 0)
		drop(d, d->n - 1);
	if (d->lfd >= 0)
		close(d->lfd);
	if (d->wake[0] >= 0)
		close(d->wake[0]);
	if (d->wake[1] >= 0)
		close(d->wake[1]);
	free(d->conns);
	free(d->pfd);
	free(d);
}
