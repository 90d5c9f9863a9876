/* engine_flags.c - see engine_flags.h. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine_flags.h"
#include "size_parse.h"

const char coli_engine_flags_help[] =
	"engine options:\n"
	"  --threads N          compute threads (default: online cores; COLI_THREADS)\n"
	"  --ctx N              context length in tokens (default 4096; COLI_CTX)\n"
	"  --expert-cache SIZE  RAM for cached experts: 512MB, 8GB, 25%, auto (COLI_EXPERT_CACHE)\n"
	"  --pin-budget SIZE    RAM for the pinned hot set (COLI_PIN_BUDGET)\n"
	"  --no-prefetch        do not read predicted next-layer experts early (COLI_PREFETCH=0)\n"
	"  --direct, --no-direct  O_DIRECT expert reads on/off (default auto; COLI_DIRECT)\n"
	"  --mirror DIR         extra copy of experts/ on another drive, repeatable (COLI_MODEL_MIRROR)\n"
	"  --cache-dir DIR      sessions, expert heat and logs (COLI_CACHE_DIR)\n";

static int parse_int(const char *s, const char *what, int lo, int hi, int *out, coli_err *err)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return coli_err_set(err, -EINVAL, "%s: expected an integer in %d..%d, got '%s'", what, lo, hi, s);
	*out = (int)v;
	return 0;
}

static int parse_bool(const char *s, const char *what, int *out, coli_err *err)
{
	if (!strcmp(s, "1") || !strcmp(s, "yes") || !strcmp(s, "on") || !strcmp(s, "true"))
		*out = 1;
	else if (!strcmp(s, "0") || !strcmp(s, "no") || !strcmp(s, "off") || !strcmp(s, "false"))
		*out = 0;
	else
		return coli_err_set(err, -EINVAL, "%s: expected 0 or 1, got '%s'", what, s);
	return 0;
}

static int add_mirror(coli_engine_flags *f, const char *dir, coli_err *err)
{
	if (f->n_mirrors == COLI_MAX_MIRRORS)
		return coli_err_set(err, -E2BIG, "--mirror: at most %d mirrors", COLI_MAX_MIRRORS);
	f->mirrors[f->n_mirrors++] = dir;
	f->mirrors[f->n_mirrors] = NULL;
	f->opts.mirrors = f->mirrors;
	return 0;
}

int coli_engine_flags_init(coli_engine_flags *f, coli_err *err)
{
	memset(f, 0, sizeof *f);
	coli_engine_opts_default(&f->opts);
	const char *v;
	int rc;
	if ((v = getenv("COLI_THREADS")) && *v && (rc = parse_int(v, "COLI_THREADS", 0, 1024, &f->opts.threads, err)))
		return rc;
	if ((v = getenv("COLI_CTX")) && *v && (rc = parse_int(v, "COLI_CTX", 1, 1 << 24, &f->opts.ctx, err)))
		return rc;
	if ((v = getenv("COLI_EXPERT_CACHE")) && *v &&
	    (rc = size_parse(v, "COLI_EXPERT_CACHE", &f->opts.expert_cache_bytes, err)))
		return rc;
	if ((v = getenv("COLI_PIN_BUDGET")) && *v && (rc = size_parse(v, "COLI_PIN_BUDGET", &f->opts.pin_bytes, err)))
		return rc;
	if ((v = getenv("COLI_PREFETCH")) && *v && (rc = parse_bool(v, "COLI_PREFETCH", &f->opts.prefetch, err)))
		return rc;
	if ((v = getenv("COLI_DIRECT")) && *v && (rc = parse_bool(v, "COLI_DIRECT", &f->opts.direct, err)))
		return rc;
	if ((v = getenv("COLI_CACHE_DIR")) && *v)
		f->opts.cache_dir = v;
	if ((v = getenv("COLI_MODEL_MIRROR")) && *v) {
		if (!(f->env_mirrors = strdup(v)))
			return coli_err_set(err, -ENOMEM, "out of memory");
		char *save = NULL;
		for (char *d = strtok_r(f->env_mirrors, ":", &save); d; d = strtok_r(NULL, ":", &save))
			if ((rc = add_mirror(f, d, err)))
				return rc;
	}
	return 0;
}

void coli_engine_flags_free(coli_engine_flags *f)
{
	free(f->env_mirrors);
	f->env_mirrors = NULL;
}

int coli_engine_flags_parse(coli_engine_flags *f, int argc, char **argv, int *i, coli_err *err)
{
	const char *a = argv[*i];
	const char *val = NULL;
	static const char *const with_value[] = { "--threads", "--ctx", "--expert-cache", "--pin-budget",
						  "--mirror", "--cache-dir", NULL };
	for (int k = 0; with_value[k]; k++) {
		if (strcmp(a, with_value[k]))
			continue;
		if (*i + 1 >= argc)
			return coli_err_set(err, -EINVAL, "%s needs a value", a);
		val = argv[++*i];
		break;
	}
	if (!strcmp(a, "--threads"))
		return parse_int(val, a, 0, 1024, &f->opts.threads, err) ?: 1;
	if (!strcmp(a, "--ctx"))
		return parse_int(val, a, 1, 1 << 24, &f->opts.ctx, err) ?: 1;
	if (!strcmp(a, "--expert-cache"))
		return size_parse(val, a, &f->opts.expert_cache_bytes, err) ?: 1;
	if (!strcmp(a, "--pin-budget"))
		return size_parse(val, a, &f->opts.pin_bytes, err) ?: 1;
	if (!strcmp(a, "--mirror"))
		return add_mirror(f, val, err) ?: 1;
	if (!strcmp(a, "--cache-dir")) {
		f->opts.cache_dir = val;
		return 1;
	}
	if (!strcmp(a, "--no-prefetch") || !strcmp(a, "--prefetch")) {
		f->opts.prefetch = !strcmp(a, "--prefetch");
		return 1;
	}
	if (!strcmp(a, "--direct") || !strcmp(a, "--no-direct")) {
		f->opts.direct = !strcmp(a, "--direct");
		return 1;
	}
	return 0;
}
