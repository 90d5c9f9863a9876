/* compare_metrics.c - the local side's expert counters, read from coli's
 * /metrics before and after each request: their difference is that
 * request's hit rate and bytes read (requests run one at a time, so only
 * another client of the same server could blur it). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "compare.h"

/* Value of a sample line "NAME{labels} VALUE" or "NAME VALUE" when the
 * metric name is exactly name; sums over label sets. */
static int sample(const char *line, const char *name, double *acc)
{
	size_t n = strlen(name);
	if (strncmp(line, name, n) || (line[n] != ' ' && line[n] != '{'))
		return 0;
	const char *v = line + n;
	if (*v == '{') {
		v = strchr(v, '}');
		if (!v)
			return 0;
		v++;
	}
	char *end;
	double x = strtod(v, &end);
	if (end == v)
		return 0;
	*acc += x;
	return 1;
}

void cmp_xstats_parse(const char *text, cmp_xstats *x)
{
	memset(x, 0, sizeof *x);
	int seen = 0;
	for (const char *l = text; l && *l;) {
		if (*l != '#') {
			seen |= sample(l, "coli_expert_hits_total", &x->hits) ? 1 : 0;
			seen |= sample(l, "coli_expert_misses_total", &x->misses) ? 2 : 0;
			seen |= sample(l, "coli_expert_bytes_read_total", &x->bytes) ? 4 : 0;
		}
		l = strchr(l, '\n');
		if (l)
			l++;
	}
	x->valid = seen == 7;
}

static size_t on_body(char *b, size_t sz, size_t nm, void *arg)
{
	util_buf *f = arg;
	size_t n = sz * nm;
	if (f->len + n > (8u << 20))
		return 0;   /* not coli's /metrics */
	return util_buf_add(f, b, n) ? 0 : n;
}

void cmp_xstats_fetch(const cmp_endpoint *ep, cmp_xstats *x)
{
	memset(x, 0, sizeof *x);
	char url[1200], auth[1100];
	snprintf(url, sizeof url, "%s/metrics", ep->base);
	CURL *h = curl_easy_init();
	if (!h)
		return;
	util_buf f = { 0 };
	struct curl_slist *hd = NULL;
	if (ep->key) {
		snprintf(auth, sizeof auth, "Authorization: Bearer %s", ep->key);
		hd = curl_slist_append(hd, auth);
		memset(auth, 0, sizeof auth);
	}
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hd);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &f);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, 10L);
	long status = 0;
	if (curl_easy_perform(h) == CURLE_OK &&
	    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status) == CURLE_OK && status == 200 && f.p)
		cmp_xstats_parse(f.p, x);
	curl_slist_free_all(hd);
	curl_easy_cleanup(h);
	util_buf_free(&f);
}
