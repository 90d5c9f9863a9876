/* pull_retry.c - see pull_retry.h: how long the hub client waits between
 * two tries of a request and how it says it gave up. */
#include "config.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "pull_retry.h"

/* A number of seconds from the environment, or the default left alone. */
int hub_env_seconds(const char *name, double lo, double hi, double *out, coli_err *err)
{
	const char *v = getenv(name);
	if (!v || !*v)
		return 0;
	char *end;
	errno = 0;
	double d = strtod(v, &end);
	if (errno || *end || !(d >= lo && d <= hi))
		return coli_err_set(err, -EINVAL, "%s=%s: not a number of seconds from %g to %g", name, v,
				    lo, hi);
	*out = d;
	return 0;
}

/* "6 tries" or "3 tries in 1.2 s (retry deadline 1 s)". */
void hub_tries_text(char *buf, size_t cap, int tries, int late, double secs, double deadline)
{
	if (late)
		snprintf(buf, cap, "%d %s in %.1f s (retry deadline %g s)", tries, tries == 1 ? "try" : "tries",
			 secs, deadline);
	else
		snprintf(buf, cap, "%d %s", tries, tries == 1 ? "try" : "tries");
}

void hub_sleep_s(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* The wait after failed try `attempt` (1-based): Retry-After when the
 * server gave one, else backoff_s doubling with each try, drawn from its
 * upper half (jitter: connections that failed together do not come back
 * together); both capped at a minute. */
double hub_backoff(hub_client *h, int attempt, long retry_after)
{
	if (retry_after >= 0)
		return retry_after > 60 ? 60 : (double)retry_after;
	double w = h->backoff_s;
	for (int i = 1; i < attempt && w < 60; i++)
		w *= 2;
	if (w > 60)
		w = 60;
	h->jitter ^= h->jitter << 13;
	h->jitter ^= h->jitter >> 7;
	h->jitter ^= h->jitter << 17;
	return w * (0.5 + 0.5 * (double)(h->jitter >> 11) / 9007199254740992.0);
}

/* Retry-After from one header line: seconds, or an HTTP date (its
 * distance from now); -1 when the line is not one. (CURLINFO_RETRY_AFTER
 * cannot tell an absent header from "Retry-After: 0": it gives 0 for
 * both, which made every wait 0 s.) */
long hub_parse_retry_after(const char *data, size_t n)
{
	char line[256];
	if (n >= sizeof line || n < 12 || strncasecmp(data, "retry-after:", 12))
		return -1;
	memcpy(line, data + 12, n - 12);
	line[n - 12] = '\0';
	char *v = line + strspn(line, " \t"), *end;
	v[strcspn(v, "\r\n")] = '\0';
	long s = strtol(v, &end, 10);
	if (end != v && !*end)
		return s >= 0 ? s : -1;
	time_t t = curl_getdate(v, NULL);
	if (t < 0)
		return -1;
	time_t now = time(NULL);
	return t > now ? (long)(t - now) : 0;
}
