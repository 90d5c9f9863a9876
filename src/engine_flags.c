/* engine_flags.c - see engine_flags.h. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util_args.h"
#include "engine_flags.h"
#include "engine_model.h"

const char coli_engine_flags_help[] =
	"engine options (see coli(1) for details and environment twins):\n"
	"  --threads N              compute threads (default: online cores)\n"
	"  --ctx N                  context length in tokens (default 4096)\n"
	"  --parallel N|auto        requests decoded together, 1-256 (default: up to 4;\n"
	"                           auto: as many as a quarter of the memory holds)\n"
	"  --kv-ram N               KV tokens kept in RAM per request (default: --ctx)\n"
	"  --prefill-batch N        prompt tokens evaluated per step (default 128)\n"
	"  --act-quant f32|q8       matmul activations: exact f32 (default) or int8 (faster)\n"
	"  --cache-dir DIR          sessions, expert heat and logs\n"
	"  --draft auto|off|N       MTP speculative decoding (default auto: only\n"
	"                           while it predicts a speed-up)\n"
	"  --no-heat                neither load nor save routing heat (no warm start)\n"
	"  --no-profiles            record no routing profiles (coli atlas, colitop)\n"
	"  --share-session-prefixes  requests without a session may reuse saved\n"
	"                           sessions' KV (reveals their text; default off)\n"
	"  --expert-cache SIZE      RAM for cached experts: 512MB, 8GB, 25%, 0, auto\n"
	"  --pin-budget SIZE        part of it for the pinned hot set\n"
	"  --prefetch, --no-prefetch  read predicted next-layer experts early\n"
	"  --direct, --no-direct    O_DIRECT expert reads (default auto)\n"
	"  --mirror DIR             copy of experts/ on another drive (repeatable)\n"
	"  --mirror-weights W,...   read shares, primary first\n"
	"  --cache-policy lfu-next|lfu-decay|lru  expert cache eviction policy\n"
	"  --no-verify-checksums    skip the CRC-32C of tensors and records read\n";

static int parse_int(const char *s, const char *what, int lo, int hi, int *out, coli_err *err);

/* --parallel / COLI_PARALLEL: 0..COLI_MAX_PARALLEL or "auto". */
static int parse_parallel(const char *s, const char *what, int *out, coli_err *err)
{
	if (!strcmp(s, "auto")) {
		*out = COLI_PARALLEL_AUTO;
		return 0;
	}
	return parse_int(s, what, 0, COLI_MAX_PARALLEL, out, err);
}

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
	if ((v = getenv("COLI_KV_RAM")) && *v && (rc = parse_int(v, "COLI_KV_RAM", 0, 1 << 24, &f->opts.kv_ram, err)))
		return rc;
	if ((v = getenv("COLI_PREFILL_BATCH")) && *v &&
	    (rc = parse_int(v, "COLI_PREFILL_BATCH", 1, 4096, &f->opts.prefill_batch, err)))
		return rc;
	if ((v = getenv("COLI_PARALLEL")) && *v &&
	    (rc = parse_parallel(v, "COLI_PARALLEL", &f->opts.parallel, err)))
		return rc;
	if ((v = getenv("COLI_SHARE_SESSION_PREFIXES")) && *v)
		f->opts.share_session_prefixes = strcmp(v, "0") != 0;
	if ((v = getenv("COLI_NO_HEAT")) && *v)
		f->opts.no_heat = strcmp(v, "0") != 0;
	if ((v = getenv("COLI_NO_PROFILES")) && *v)
		f->opts.no_profiles = strcmp(v, "0") != 0;
	if ((v = getenv("COLI_CACHE_DIR")) && *v)
		f->opts.cache_dir = v;
	if ((v = getenv("COLI_DRAFT")) && *v && (rc = coli_draft_parse(v, "COLI_DRAFT", &f->opts.draft, err)))
		return rc;
	if ((v = getenv("COLI_ACT_QUANT")) && *v) {
		if ((f->opts.act_quant = coli_act_quant_parse(v)) < 0)
			return coli_err_set(err, -EINVAL, "COLI_ACT_QUANT: expected f32 or q8, got '%s'", v);
	}
	return expert_store_opts_from_env(&f->opts.store, err);
}

void coli_engine_flags_free(coli_engine_flags *f)
{
	(void)f;
}

int coli_engine_flags_parse(coli_engine_flags *f, int argc, char **argv, int *i, coli_err *err)
{
	const char *arg = argv[*i];
	if (strncmp(arg, "--", 2))
		return 0;
	/* split "--flag=value" */
	char flag[64];
	const char *eq = strchr(arg, '=');
	size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
	if (len >= sizeof flag)
		return 0;
	memcpy(flag, arg, len);
	flag[len] = '\0';
	const char *inline_val = eq ? eq + 1 : NULL;
	const char *next = *i + 1 < argc ? argv[*i + 1] : NULL;
	const char *val = inline_val ? inline_val : next;

	int *target = !strcmp(flag, "--threads")    ? &f->opts.threads
		      : !strcmp(flag, "--ctx")      ? &f->opts.ctx
		      : !strcmp(flag, "--parallel") ? &f->opts.parallel
		      : !strcmp(flag, "--kv-ram")   ? &f->opts.kv_ram
		      : !strcmp(flag, "--prefill-batch") ? &f->opts.prefill_batch
						    : NULL;
	if (!strcmp(flag, "--share-session-prefixes") || !strcmp(flag, "--no-share-session-prefixes")) {
		if (inline_val)
			return coli_err_set(err, -EINVAL, "%s takes no value", flag);
		f->opts.share_session_prefixes = flag[2] != 'n';
		return 1;
	}
	if (!strcmp(flag, "--draft")) {
		if (!val)
			return coli_err_set(err, -EINVAL, "%s needs a value", flag);
		int rc = coli_draft_parse(val, flag, &f->opts.draft, err);
		if (rc)
			return rc;
		if (!inline_val)
			++*i;
		return 1;
	}
	if (!strcmp(flag, "--no-heat") || !strcmp(flag, "--heat")) {
		if (inline_val)
			return coli_err_set(err, -EINVAL, "%s takes no value", flag);
		f->opts.no_heat = flag[2] == 'n';
		return 1;
	}
	if (!strcmp(flag, "--no-profiles") || !strcmp(flag, "--profiles")) {
		if (inline_val)
			return coli_err_set(err, -EINVAL, "%s takes no value", flag);
		f->opts.no_profiles = flag[2] == 'n';
		return 1;
	}
	if (!strcmp(flag, "--act-quant")) {
		if (!val)
			return coli_err_set(err, -EINVAL, "%s needs a value", flag);
		if ((f->opts.act_quant = coli_act_quant_parse(val)) < 0)
			return coli_err_set(err, -EINVAL, "%s: expected f32 or q8, got '%s'", flag, val);
		if (!inline_val)
			++*i;
		return 1;
	}
	if (target || !strcmp(flag, "--cache-dir")) {
		if (!val)
			return coli_err_set(err, -EINVAL, "%s needs a value", flag);
		if (target == &f->opts.parallel) {
			int rc = parse_parallel(val, flag, target, err);
			if (rc)
				return rc;
		} else if (target) {
			int is_ctx = !strcmp(flag, "--ctx");
			int hi = is_ctx || !strcmp(flag, "--kv-ram") ? 1 << 24
				 : !strcmp(flag, "--prefill-batch") ? 4096
								    : 1024;
			int rc = parse_int(val, flag, is_ctx, hi, target, err);
			if (rc)
				return rc;
		} else {
			f->opts.cache_dir = val;
		}
		if (!inline_val)
			++*i;
		return 1;
	}
	int used = expert_store_opts_parse_flag(&f->opts.store, arg, inline_val ? NULL : next, err);
	if (used == -ENOENT) {
		coli_err_clear(err);
		return 0;
	}
	if (used < 0)
		return used;
	*i += used;
	return 1;
}

const char coli_gen_flags_help[] =
	"  -n, --max-tokens N  tokens to generate\n"
	"  --temp T            temperature (default 0 = greedy)\n"
	"  --top-p P           nucleus sampling (default 1 = off)\n"
	"  --seed S            sampling seed (default 0)\n";

int coli_gen_flags_parse(coli_gen_params *p, int argc, char **argv, int *i, coli_err *err)
{
	const char *a = argv[*i];
	if (strcmp(a, "-n") && strcmp(a, "--max-tokens") && strcmp(a, "--temp") && strcmp(a, "--top-p") &&
	    strcmp(a, "--seed"))
		return 0;
	if (*i + 1 >= argc)
		return coli_err_set(err, -EINVAL, "%s needs a value", a);
	const char *v = argv[++*i];
	long lv;
	double dv;
	int rc;
	if (!strcmp(a, "-n") || !strcmp(a, "--max-tokens")) {
		if ((rc = util_parse_int(v, a, 1, 1 << 24, &lv, err)))
			return rc;
		p->max_tokens = (int)lv;
	} else if (!strcmp(a, "--temp")) {
		if ((rc = util_parse_float(v, a, 0, 100, &dv, err)))
			return rc;
		p->temperature = (float)dv;
	} else if (!strcmp(a, "--top-p")) {
		if ((rc = util_parse_float(v, a, 0, 1, &dv, err)))
			return rc;
		p->top_p = (float)dv;
	} else {
		if ((rc = util_parse_int(v, a, 0, 0x7fffffffffffffffL, &lv, err)))
			return rc;
		p->seed = (uint64_t)lv;
	}
	return 1;
}

int coli_engine_flags_parse_args(coli_engine_flags *f, coli_gen_params *gp, int argc, char **argv,
				 coli_cmd_flag_fn own, void *ctx, const char **pos, coli_err *err)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		int rr = coli_engine_flags_parse(f, argc, argv, &i, err);
		if (!rr && gp)
			rr = coli_gen_flags_parse(gp, argc, argv, &i, err);
		if (!rr && (!strcmp(a, "--help") || !strcmp(a, "-h")))
			return COLI_ARGS_HELP;
		if (!rr && own)
			rr = own(ctx, argc, argv, &i, err);
		if (rr < 0)
			return rr;
		if (rr)
			continue;
		if (pos && a[0] != '-' && !*pos)
			*pos = a;
		else
			return coli_err_set(err, -EINVAL, "unexpected argument '%s' (see --help)", a);
	}
	return 0;
}

void coli_engine_flags_model_opts(const coli_engine_flags *f, coli_model_opts *mo)
{
	coli_engine_model_opts(&f->opts, NULL, mo);
}
