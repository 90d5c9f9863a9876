/* engine_stop_match.c - see engine_stop_match.h. */
#include "config.h"

#include <string.h>

#include "engine_stop_match.h"

void stop_match_init(stop_match *m, const char *const *stops)
{
	m->stops = stops;
	m->n_held = 0;
	m->max_stop = 0;
	for (int i = 0; stops && stops[i]; i++) {
		size_t n = strlen(stops[i]);
		if (n > m->max_stop)
			m->max_stop = n;
	}
	if (m->max_stop >= sizeof m->held / 2)
		m->max_stop = sizeof m->held / 2 - 1;
}

/* Length of the longest suffix of buf[0..n) that is a proper prefix of a
 * stop sequence. */
static size_t partial_suffix(const stop_match *m, const char *buf, size_t n)
{
	size_t best = 0;
	for (int i = 0; m->stops && m->stops[i]; i++) {
		size_t sl = strlen(m->stops[i]);
		if (sl == 0)
			continue;
		for (size_t k = sl - 1 < n ? sl - 1 : n; k > best; k--)
			if (!memcmp(buf + n - k, m->stops[i], k)) {
				best = k;
				break;
			}
	}
	return best;
}

size_t stop_match_push(stop_match *m, const char *text, size_t len, char *out, size_t cap, int *hit)
{
	*hit = 0;
	size_t out_n = 0;
	if (!m->stops || !m->stops[0]) {
		size_t n = len < cap ? len : cap;
		memcpy(out, text, n);
		return n;
	}
	while (len > 0) {
		size_t room = sizeof m->held - m->n_held;
		size_t take = len < room ? len : room;
		memcpy(m->held + m->n_held, text, take);
		m->n_held += take;
		text += take;
		len -= take;
		/* earliest complete stop sequence */
		size_t first = m->n_held;
		for (int i = 0; m->stops[i]; i++) {
			size_t sl = strlen(m->stops[i]);
			if (!sl || sl > m->n_held)
				continue;
			for (size_t at = 0; at + sl <= m->n_held && at < first; at++)
				if (!memcmp(m->held + at, m->stops[i], sl)) {
					first = at;
					break;
				}
		}
		if (first < m->n_held) {
			size_t n = first < cap - out_n ? first : cap - out_n;
			memcpy(out + out_n, m->held, n);
			out_n += n;
			m->n_held = 0;
			*hit = 1;
			return out_n;
		}
		size_t keep = partial_suffix(m, m->held, m->n_held);
		size_t release = m->n_held - keep;
		if (release > cap - out_n)
			release = cap - out_n;
		memcpy(out + out_n, m->held, release);
		out_n += release;
		memmove(m->held, m->held + release, m->n_held - release);
		m->n_held -= release;
	}
	return out_n;
}

size_t stop_match_flush(stop_match *m, char *out, size_t cap)
{
	size_t n = m->n_held < cap ? m->n_held : cap;
	memcpy(out, m->held, n);
	m->n_held = 0;
	return n;
}
