/* server_util.c - small helpers of the HTTP layer: error values, response
 * ids, UTF-8 validation. */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "server.h"
#include "server_internal.h"
#include "util_unicode.h"

int srv_fail(srv_error *e, int status, const char *type, const char *code, const char *param,
	     const char *fmt, ...)
{
	if (!e)
		return -EINVAL;
	e->status = status;
	snprintf(e->type, sizeof e->type, "%s", type ? type : "invalid_request_error");
	snprintf(e->code, sizeof e->code, "%s", code ? code : "");
	snprintf(e->param, sizeof e->param, "%s", param ? param : "");
	/* Messages quote request text (URLs, model names), which may be
	 * invalid UTF-8 or longer than the message: format in full, then copy
	 * through the sanitiser so the JSON encoder never refuses the message
	 * (that used to turn a 4xx into a 500). */
	char full[2048];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(full, sizeof full, fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	srv_utf8_copy(e->message, sizeof e->message, full,
		      (size_t)n < sizeof full ? (size_t)n : sizeof full - 1);
	return -EINVAL;
}

/* Bytes of the valid UTF-8 character at s[0..n), 0 when invalid or cut. */
static size_t utf8_char_len(const unsigned char *s, size_t n)
{
	uint32_t cp;
	int k = unicode_utf8_next(s, n, &cp);
	return k > 0 ? (size_t)k : 0;
}

size_t srv_utf8_copy(char *dst, size_t cap, const char *src, size_t n)
{
	const unsigned char *s = (const unsigned char *)src;
	size_t o = 0;
	if (!cap)
		return 0;
	for (size_t i = 0; i < n;) {
		size_t k = utf8_char_len(s + i, n - i);
		/* control characters and invalid bytes become visible \xNN */
		int esc = k == 0 || (k == 1 && (s[i] < 0x20 || s[i] == 0x7f));
		size_t need = esc ? 4 : k;
		if (o + need + 1 > cap)
			break;
		if (esc) {
			snprintf(dst + o, 5, "\\x%02x", s[i]);
			k = 1;
		} else {
			memcpy(dst + o, s + i, k);
		}
		o += need;
		i += k;
	}
	dst[o] = '\0';
	return o;
}

/* Ids only need to be unique and unguessable enough not to collide between
 * runs; a counter mixed with the start time and pid is plenty. */
void srv_make_id(char *out, size_t cap, const char *prefix)
{
	static _Atomic uint64_t counter;
	/* set once by whichever thread (coli batch runs several) comes first:
	 * a plain static was a data race (ThreadSanitizer, tests/batch_run.sh) */
	static _Atomic uint64_t base_once;
	uint64_t base = atomic_load_explicit(&base_once, memory_order_relaxed);
	if (!base) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		uint64_t mine = ((uint64_t)ts.tv_sec << 32) ^ (uint64_t)ts.tv_nsec ^
				((uint64_t)getpid() << 16);
		base = 0;
		if (atomic_compare_exchange_strong_explicit(&base_once, &base, mine,
							    memory_order_relaxed, memory_order_relaxed))
			base = mine;
	}
	uint64_t x = base + atomic_fetch_add(&counter, 1) * 0x9E3779B97F4A7C15ull;
	/* splitmix64 finaliser: spreads consecutive counters over all digits */
	x ^= x >> 30;
	x *= 0xBF58476D1CE4E5B9ull;
	x ^= x >> 27;
	x *= 0x94D049BB133111EBull;
	x ^= x >> 31;
	snprintf(out, cap, "%s%016llx%08x", prefix, (unsigned long long)x,
		 (unsigned)(x >> 13) ^ (unsigned)base);
}

int srv_utf8_valid(const char *str, size_t n)
{
	const unsigned char *s = (const unsigned char *)str;
	for (size_t i = 0; i < n;) {
		size_t k = utf8_char_len(s + i, n - i);
		if (!k)
			return 0;
		i += k;
	}
	return 1;
}

int coli_server_host_is_loopback(const char *h)
{
	struct in_addr a4;
	struct in6_addr a6;
	if (!strcmp(h, "localhost"))
		return 1;
	if (inet_pton(AF_INET, h, &a4) == 1)
		return (ntohl(a4.s_addr) >> 24) == 127;
	if (inet_pton(AF_INET6, h, &a6) == 1)
		return IN6_IS_ADDR_LOOPBACK(&a6);
	return 0;
}
