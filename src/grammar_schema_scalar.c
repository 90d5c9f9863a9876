/* grammar_schema_scalar.c - the scalar keywords of a JSON Schema, split out
 * of grammar_json_schema.c: minimum/maximum/exclusiveMinimum/
 * exclusiveMaximum of a number or integer, as the bounds the matcher checks
 * digit by digit (grammar.c), and the string formats as patterns. */
#include "config.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar_impl.h"

/* Formats as patterns: the calendar is checked per month (29 February is
 * left out, so every date produced exists). */
#define RE_DAY "((0[13578]|1[02])-(0[1-9]|[12][0-9]|3[01])|(0[469]|11)-(0[1-9]|[12][0-9]|30)|02-(0[1-9]|1[0-9]|2[0-8]))"
/* year 0000 does not exist in ISO 8601 calendars (Python refuses it) */
#define RE_DATE "([1-9][0-9]{3}|0[1-9][0-9]{2}|00[1-9][0-9]|000[1-9])-" RE_DAY
#define RE_TIME "([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\\.[0-9]{1,6})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])"

/* Internet formats, each a subset of what validators accept (a URI has a
 * scheme and no spaces; an email a dotted domain; IPv6 the full
 * eight-group form; host labels at most 24 characters), so what is
 * generated is always valid. */
#define RE_LABEL "[A-Za-z0-9]([A-Za-z0-9-]{0,22}[A-Za-z0-9])?"
#define RE_OCTET "(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"

const char *grammar_format_pattern(const char *f)
{
	if (!strcmp(f, "date"))
		return "^" RE_DATE "$";
	if (!strcmp(f, "date-time"))
		return "^" RE_DATE "T" RE_TIME "$";
	if (!strcmp(f, "time"))
		return "^" RE_TIME "$";
	if (!strcmp(f, "uuid"))
		return "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$";
	if (!strcmp(f, "uri") || !strcmp(f, "iri"))
		return "^[a-zA-Z][a-zA-Z0-9+.-]*:[A-Za-z0-9._~:/?#@!$&'()*+,;=%-]+$";
	if (!strcmp(f, "email") || !strcmp(f, "idn-email"))
		return "^[A-Za-z0-9._+-]+@" RE_LABEL "(\\." RE_LABEL ")+$";
	if (!strcmp(f, "hostname") || !strcmp(f, "idn-hostname"))
		return "^" RE_LABEL "(\\." RE_LABEL ")*$";
	if (!strcmp(f, "ipv4"))
		return "^" RE_OCTET "(\\." RE_OCTET "){3}$";
	if (!strcmp(f, "ipv6"))
		return "^[0-9a-f]{1,4}(:[0-9a-f]{1,4}){7}$";
	return NULL;
}

static const char *const kw_numeric[] = { "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", NULL };

/* A bound of a number as a decimal in units of 1e-15 (gnum): the
 * shortest decimal that reads back as the same double (what the schema's
 * text said), which must have at most 15 significant digits and 15
 * decimal places. Magnitudes of 1e15 and more are clamped to +-1e30
 * units: a bounded number has at most 15 digits, so they decide nothing
 * beyond "all" or "none". */
static int bound_decimal(double x, gnum *out)
{
	if (fabs(x) >= 1e15) {
		*out = (x < 0 ? -1 : 1) * (gnum)GNUM_SCALE * GNUM_SCALE;
		return 0;
	}
	char buf[64];
	int p;
	for (p = 1; p <= 17; p++) {
		snprintf(buf, sizeof buf, "%.*e", p - 1, x);
		if (strtod(buf, NULL) == x)
			break;
	}
	if (p > 15)
		return -1;
	/* buf: [-]D[.DDD]e[+-]XX */
	gnum digits = 0;
	const char *q = buf + (buf[0] == '-');
	for (; *q && *q != 'e'; q++)
		if (*q >= '0' && *q <= '9')
			digits = digits * 10 + (*q - '0');
	int exp10 = atoi(q + 1) - (p - 1) + GNUM_DIGITS;   /* digits x 10^exp10 units */
	if (exp10 < 0)
		return -1;   /* more than 15 decimal places */
	while (exp10-- > 0)
		digits *= 10;
	*out = buf[0] == '-' ? -digits : digits;
	return 0;
}

/* Bounds of a number, exact on the decimal text (see gnode.num_lo). */
static int compile_number_bounds(coli_grammar *g, json_t *s, const char *path, int node, coli_err *err)
{
	gnode *nd = &g->nodes[node];
	const gnum all = (gnum)GNUM_SCALE * GNUM_SCALE;
	gnum lo = -all, hi = all;
	int any = 0;
	for (int i = 0; kw_numeric[i]; i++) {
		json_t *v = json_object_get(s, kw_numeric[i]);
		if (!v)
			continue;
		if (!json_is_number(v))
			return coli_err_set(err, -EINVAL, "%s.%s: must be a number", path, kw_numeric[i]);
		gnum b;
		if (bound_decimal(json_number_value(v), &b))
			return coli_err_set(err, -EINVAL, "%s.%s: a bound of a number must have at most 15 "
					    "significant digits and 15 decimal places", path, kw_numeric[i]);
		any = 1;
		if (i == 0 || i == 2)
			lo = b + (i == 2) > lo ? b + (i == 2) : lo;
		else
			hi = b - (i == 3) < hi ? b - (i == 3) : hi;
	}
	if (!any)
		return 0;
	if (lo > hi || lo >= all || hi <= -all)
		return coli_err_set(err, -EINVAL, "%s: no number of at most 15 digits lies within the bounds", path);
	nd->num_bounded = 1;
	nd->num_lo = lo;
	nd->num_hi = hi;
	return 0;
}

/* Integer bounds. Generated integers have at most 15 digits, so bounds
 * beyond +-1e15 (zod's safe-integer range) change nothing. Numbers:
 * compile_number_bounds. Called by grammar_json_schema.c for a number or
 * integer node. */
int grammar_schema_bounds(coli_grammar *g, json_t *s, const char *path, int node, int integer, coli_err *err)
{
	gnode *nd = &g->nodes[node];
	if (!integer)
		return compile_number_bounds(g, s, path, node, err);
	for (int i = 0; kw_numeric[i]; i++) {
		json_t *v = json_object_get(s, kw_numeric[i]);
		if (!v)
			continue;
		if (!json_is_number(v))
			return coli_err_set(err, -EINVAL, "%s.%s: must be a number", path, kw_numeric[i]);
		double x = json_number_value(v);
		if (x > 9e18)
			x = 9e18;
		if (x < -9e18)
			x = -9e18;
		double lo = i == 0 ? ceil(x) : i == 2 ? floor(x) + 1 : -9e18;
		double hi = i == 1 ? floor(x) : i == 3 ? ceil(x) - 1 : 9e18;
		if (i == 0 || i == 2)
			nd->min_int = (int64_t)lo > nd->min_int ? (int64_t)lo : nd->min_int;
		else
			nd->max_int = (int64_t)hi < nd->max_int ? (int64_t)hi : nd->max_int;
	}
	const int64_t cap = 999999999999999LL;
	if (nd->min_int > nd->max_int || nd->min_int > cap || nd->max_int < -cap)
		return coli_err_set(err, -EINVAL, "%s: no integer of at most 15 digits lies within the bounds", path);
	return 0;
}
