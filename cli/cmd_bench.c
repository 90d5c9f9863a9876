/* cmd_bench.c - `coli bench [DIR]`: prefill and decode speed, where decode
 * time goes, how the expert store did (bytes read per token, hit rate,
 * prefetch precision/recall), our cache policy against the offline optimum
 * (Belady) on the run's own routing trace, the disk ceiling, and the int4
 * kernel's bandwidth against this machine's memory bandwidth. One JSON
 * object on stdout; every figure is measured in this run. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "cmd_bench_draft.h"
#include "quant_kernel_bench.h"
#include "cli.h"
#include "cli_args.h"
#include "cli_print.h"
#include "util_args.h"
#include "engine_flags.h"
#include "engine_model.h"
#include "expert_store_stats.h"
#include "store_iobench.h"
#include "model.h"
#include "model_dir.h"
#include "sampler.h"
#include "util_time.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: coli bench [DIR] [options] [engine options]\n"
		"  --prompt N          prefill tokens (default 64)\n"
		"  --gen N             decoded tokens (default 32)\n"
		"  --cold              drop the experts from the page cache first; implies --no-heat\n"
		"  --iobench           measure the drive at the expert record size for the ceiling\n"
		"  --no-kernels        skip the kernel/memory bandwidth figures\n"
		"  --kernel-seconds S  time for the kernel figures (default 3)\n"
		"  --seed S            prompt token seed (default 1)\n"
		"  --warmup            run the prefill once untimed first (experts in the\n"
		"                      process, as llama-bench's warm-up run)\n"
		"  --draft auto|N      also decode with MTP drafting and without, interleaved\n"
		"                      in one engine: both rates, ratio, acceptance, tokens\n"
		"                      per forward (\"draft\" in the output)\n"
		"  (with --cache-dir DIR and without --no-heat the routing heat is loaded\n"
		"   from and saved to DIR/hot-experts, so a repeated run shows the learned\n"
		"   pinned set)\n%s",
		coli_engine_flags_help);
}

/* Peak resident set of this process (VmHWM), in bytes; -1 if unknown. */
static long long vm_hwm_bytes(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long long kb = -1;
	if (!f)
		return -1;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "VmHWM: %lld kB", &kb) == 1)
			break;
	fclose(f);
	return kb < 0 ? -1 : kb * 1024;
}

/* Drop cached pages of every expert shard, so reads come from the disk. */
static void drop_expert_pages(const coli_container *c)
{
	for (int l = 0; l < c->config.num_hidden_layers; l++) {
		if (!c->expert_shard_paths[l])
			continue;
		int fd = open(c->expert_shard_paths[l], O_RDONLY);
		if (fd < 0)
			continue;
		fdatasync(fd);
		posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
		close(fd);
	}
}

static json_t *policy_json(const expert_trace *t, int64_t capacity)
{
	json_t *o = json_object();
	json_object_set_new(o, "trace_tokens", json_integer(t->n_tokens));
	json_object_set_new(o, "capacity_records", json_integer(capacity));
	/* distinct (layer, expert) records the trace touches: whether the
	 * workload's working set fits the budget at all */
	size_t n_ids = (size_t)t->n_layers * (size_t)t->n_experts;
	uint32_t *uses = calloc(n_ids ? n_ids : 1, sizeof *uses);
	if (uses) {
		int64_t ws = 0, acc = 0;
		for (int tok = 0; tok < t->n_tokens; tok++)
			for (int l = 0; l < t->n_layers; l++)
				for (int k = 0; k < t->top_k; k++) {
					int32_t e = t->ids[((size_t)tok * t->n_layers + l) * t->top_k + k];
					if (e < 0)
						continue;
					acc++;
					if (!uses[(size_t)l * t->n_experts + e]++)
						ws++;
				}
		json_object_set_new(o, "working_set_records", json_integer(ws));
		/* The best fixed (pinned) set of `capacity` records: the share
		 * of accesses that go to the most used ones. */
		int64_t top = 0;
		for (int64_t c = 0; c < capacity && c < (int64_t)n_ids; c++) {
			size_t best = 0;
			for (size_t i = 1; i < n_ids; i++)
				if (uses[i] > uses[best])
					best = i;
			if (!uses[best])
				break;
			top += uses[best];
			uses[best] = 0;
		}
		json_object_set_new(o, "static_best", acc ? json_real((double)top / (double)acc) : json_null());
		free(uses);
	}
	const int policies[] = { EXPERT_POLICY_LRU, EXPERT_POLICY_LFU_DECAY, EXPERT_POLICY_LFU_NEXT,
				 EXPERT_POLICY_BELADY };
	double belady = 0.0, best = 0.0;
	for (size_t i = 0; i < sizeof policies / sizeof policies[0]; i++) {
		expert_replay_result r;
		coli_err err = { 0 };
		if (expert_store_replay_trace(t, policies[i], capacity, &r, &err))
			continue;
		json_object_set_new(o, expert_policy_name(policies[i]), json_real(r.hit_rate));
		if (policies[i] == EXPERT_POLICY_BELADY)
			belady = r.hit_rate;
		else if (r.hit_rate > best)
			best = r.hit_rate;
	}
	if (belady > 0)
		json_object_set_new(o, "best_ratio_to_belady", json_real(best / belady));
	return o;
}

struct bench_args {
	long n_prompt, n_gen, seed;
	double kernel_seconds;
	int cold, kernels, io, mtp, warmup;
};

/* bench's own flags (coli_cmd_flag_fn). */
static int bench_flag(void *ctx, int argc, char **argv, int *i, coli_err *err)
{
	struct bench_args *b = ctx;
	const char *a = argv[*i];
	int has = *i + 1 < argc;
	if (!strcmp(a, "--prompt") && has)
		return util_parse_int(argv[++*i], a, 1, 1 << 20, &b->n_prompt, err) ? -EINVAL : 1;
	if (!strcmp(a, "--gen") && has)
		return util_parse_int(argv[++*i], a, 1, 1 << 20, &b->n_gen, err) ? -EINVAL : 1;
	if (!strcmp(a, "--seed") && has)
		return util_parse_int(argv[++*i], a, 0, 0x7fffffff, &b->seed, err) ? -EINVAL : 1;
	if (!strcmp(a, "--kernel-seconds") && has)
		return util_parse_float(argv[++*i], a, 0.1, 600, &b->kernel_seconds, err) ? -EINVAL : 1;
	if (!strcmp(a, "--cold"))
		b->cold = 1;
	else if (!strcmp(a, "--iobench"))
		b->io = 1;
	else if (!strcmp(a, "--no-kernels"))
		b->kernels = 0;
	else if (!strcmp(a, "--mtp"))
		b->mtp = 1;
	else if (!strcmp(a, "--warmup"))
		b->warmup = 1;
	else
		return 0;
	return 1;
}

/* Decode CPU time by part (enum coli_part) next to the weight bytes each
 * part streams a token: where a part's share of the time exceeds its share
 * of the bytes, it runs below the rate the rest of the step streams at.
 * total_ms: the decode's CPU milliseconds per token. */
static json_t *breakdown_json(const coli_model *m, const coli_timing *t0, const coli_timing *t1, long n_gen,
			      double total_ms)
{
	double bytes[COLI_PART_COUNT], ms[COLI_PART_COUNT], ms_sum = 0.0, bytes_sum = 0.0;
	coli_model_part_bytes(m, bytes);
	for (int p = 0; p < COLI_PART_COUNT; p++) {
		ms[p] = (t1->part[p] - t0->part[p]) * 1e3 / n_gen;
		ms_sum += ms[p];
		bytes_sum += bytes[p];
	}
	json_t *o = json_object(), *parts = json_object();
	double attn_ms = 0.0, attn_bytes = 0.0;
	for (int p = 0; p < COLI_PART_COUNT; p++) {
		json_t *e = json_object();
		json_object_set_new(e, "cpu_ms_per_token", json_real(ms[p]));
		json_object_set_new(e, "time_share", total_ms > 0 ? json_real(ms[p] / total_ms) : json_null());
		json_object_set_new(e, "weight_bytes", json_integer((json_int_t)bytes[p]));
		json_object_set_new(e, "bytes_share", bytes_sum > 0 ? json_real(bytes[p] / bytes_sum) : json_null());
		/* the rate the part streamed its weights at per thread (bytes
		 * over its CPU time) */
		json_object_set_new(e, "gbps_per_thread",
				    ms[p] > 0 && bytes[p] > 0 ? json_real(bytes[p] / ms[p] * 1e-6) : json_null());
		json_object_set_new(parts, coli_part_name(p), e);
		if (p <= COLI_PART_O_PROJ) {
			attn_ms += ms[p];
			attn_bytes += bytes[p];
		}
	}
	json_object_set_new(o, "parts", parts);
	json_object_set_new(o, "total_cpu_ms_per_token", json_real(total_ms));
	/* norms, residual adds, embedding, argmax: what no part names */
	json_object_set_new(o, "other_cpu_ms_per_token", json_real(total_ms - ms_sum));
	json_object_set_new(o, "weight_bytes_per_token", json_integer((json_int_t)bytes_sum));
	json_object_set_new(o, "attention_cpu_ms_per_token", json_real(attn_ms));
	json_object_set_new(o, "attention_time_share", total_ms > 0 ? json_real(attn_ms / total_ms) : json_null());
	json_object_set_new(o, "attention_bytes_share", bytes_sum > 0 ? json_real(attn_bytes / bytes_sum) : json_null());
	return o;
}

/* Wall ms per token of each part of the forward pass between two timing
 * snapshots (disk_wait: the expert store's wait over the same span). */
static json_t *time_split_json(const coli_timing *tm, const coli_timing *t0, double disk_wait, long tokens)
{
	json_t *split = json_object();
	double per = 1000.0 / (double)tokens;
	json_object_set_new(split, "attention_ms", json_real((tm->attention - t0->attention) * per));
	/* DSA models: the indexer's part of attention_ms */
	json_object_set_new(split, "indexer_ms", json_real((tm->indexer - t0->indexer) * per));
	json_object_set_new(split, "moe_ms", json_real((tm->moe - t0->moe) * per));
	json_object_set_new(split, "disk_wait_ms", json_real(disk_wait * per));
	json_object_set_new(split, "dense_ffn_ms", json_real((tm->dense_ffn - t0->dense_ffn) * per));
	json_object_set_new(split, "other_ms", json_real((tm->other - t0->other) * per));
	return split;
}

/* The expert store over the decode (its counters before and after it):
 * "experts", the cache policies replayed on the decode's routing trace
 * ("policy") and, with the --iobench measurement (io, else NULL), the
 * disk ceiling ("io"), into out. */
static void experts_json(json_t *out, const expert_stats_summary *before, const expert_stats_summary *after,
			 const expert_trace *trace, long n_gen, double t_decode, const store_iobench_report *io)
{
	json_t *ex = json_object();
	uint64_t bytes = after->bytes_read - before->bytes_read;
	uint64_t hits = (after->hits_pinned + after->hits_cached + after->hits_prefetched) -
			(before->hits_pinned + before->hits_cached + before->hits_prefetched);
	uint64_t misses = after->misses - before->misses;
	double bpt = (double)bytes / n_gen;
	json_object_set_new(ex, "record_bytes", json_integer(after->record_size));
	json_object_set_new(ex, "budget_pin", json_integer(after->budget_pin));
	json_object_set_new(ex, "budget_cache", json_integer(after->budget_cache));
	json_object_set_new(ex, "direct", json_boolean(after->direct));
	json_object_set_new(ex, "bytes_read_per_token", json_real(bpt));
	json_object_set_new(ex, "achieved_gbps", json_real(bytes / t_decode / 1e9));
	/* while reads were in flight: how well the reads use the drive,
	 * whether or not compute left it idle in between */
	double busy = after->busy_seconds - before->busy_seconds;
	json_object_set_new(ex, "io_busy_fraction", json_real(busy / t_decode));
	json_object_set_new(ex, "busy_gbps", busy > 0 ? json_real(bytes / busy / 1e9) : json_null());
	json_object_set_new(ex, "hit_rate", hits + misses ? json_real((double)hits / (hits + misses)) : json_null());
	/* served from RAM without a read in this step's path: pinned or
	 * cached (a prefetched record was still read from the disk) */
	uint64_t ram_hits = (after->hits_pinned + after->hits_cached) - (before->hits_pinned + before->hits_cached);
	json_object_set_new(ex, "cache_hit_rate",
			    hits + misses ? json_real((double)ram_hits / (hits + misses)) : json_null());
	json_object_set_new(ex, "hits_pinned", json_integer(after->hits_pinned - before->hits_pinned));
	json_object_set_new(ex, "hits_cached", json_integer(after->hits_cached - before->hits_cached));
	json_object_set_new(ex, "hits_prefetched", json_integer(after->hits_prefetched - before->hits_prefetched));
	json_object_set_new(ex, "misses", json_integer(misses));
	uint64_t issued = after->prefetch_issued - before->prefetch_issued;
	uint64_t used = after->prefetch_used - before->prefetch_used;
	uint64_t used_total = after->used_total - before->used_total;
	uint64_t used_pf = after->used_prefetched - before->used_prefetched;
	json_object_set_new(ex, "prefetch_precision", issued ? json_real((double)used / issued) : json_null());
	json_object_set_new(ex, "prefetch_recall", used_total ? json_real((double)used_pf / used_total) : json_null());
	/* the bytes the routing needed from the disk (records it used that
	 * were not in RAM: misses, and prefetched records that were used)
	 * apart from the bytes wasted on prefetched records never used */
	uint64_t needed = (misses + (after->hits_prefetched - before->hits_prefetched)) * after->record_size;
	uint64_t wasted = (issued > used ? issued - used : 0) * after->record_size;
	double npt = (double)needed / n_gen;
	json_object_set_new(ex, "needed_bytes_per_token", json_real(npt));
	json_object_set_new(ex, "wasted_prefetch_bytes_per_token", json_real((double)wasted / n_gen));
	/* step time against the slower of its two parts: 1.0 when reads
	 * and compute overlap perfectly, 2.0 when they run one after the
	 * other in equal shares */
	double io_s = busy / n_gen, compute_s = (t_decode - (after->wait_seconds - before->wait_seconds)) / n_gen;
	double slower = io_s > compute_s ? io_s : compute_s;
	json_object_set_new(ex, "step_ms", json_real(t_decode / n_gen * 1e3));
	json_object_set_new(ex, "io_busy_ms_per_token", json_real(io_s * 1e3));
	json_object_set_new(ex, "compute_ms_per_token", json_real(compute_s * 1e3));
	json_object_set_new(ex, "step_over_max_io_compute", slower > 0 ? json_real(t_decode / n_gen / slower)
								       : json_null());
	/* the per-drive byte counters over the decode (primary, mirrors) */
	json_t *dv = json_array();
	for (int d = 0; d < after->n_drives && d < EXPERT_STATS_MAX_DRIVES; d++)
		json_array_append_new(dv, json_pack("{s:s,s:I}", "name", after->drives[d].name, "bytes",
						    (json_int_t)(after->drives[d].bytes - before->drives[d].bytes)));
	json_object_set_new(ex, "drives", dv);
	json_object_set_new(out, "experts", ex);
	int64_t cap = after->record_size > 0 ? (after->budget_pin + after->budget_cache) / after->record_size : 0;
	json_object_set_new(out, "policy", policy_json(trace, cap));
	if (io) {
		json_t *ij = json_object();
		double gbps = io->best_large_bps;
		json_object_set_new(ij, "iobench_gbps_at_record_size", json_real(gbps / 1e9));
		if (npt > 0) {
			/* the ceiling counts only the bytes the misses need: a
			 * wrong prefetch guess lowers the decode ratio, it does
			 * not raise the ceiling */
			double ceiling = gbps / npt;
			json_object_set_new(ij, "ceiling_tokens_per_s", json_real(ceiling));
			json_object_set_new(ij, "decode_ratio_to_ceiling", json_real((n_gen / t_decode) / ceiling));
		}
		if (bpt > 0) {
			/* the read rate (needed and wasted bytes alike) over the
			 * drive's rate: how busy the reads kept the drive, not
			 * how close decode is to the limit */
			json_object_set_new(ij, "read_ratio_to_iobench", json_real((bytes / t_decode) / gbps));
			if (busy > 0)
				json_object_set_new(ij, "busy_read_ratio_to_iobench",
						    json_real((bytes / busy) / gbps));
		}
		json_object_set_new(out, "io", ij);
	}
}

/* A point of the run: the expert store's counters (zero without a store),
 * the forward pass's part times, CPU and wall seconds; two bound a phase.
 * The clocks are read innermost: last at a phase's start, first at its
 * end. */
typedef struct bench_mark {
	expert_stats_summary ex;
	coli_timing tm;
	double cpu, wall;
} bench_mark;

static void bench_mark_take(const expert_stats *st, const coli_state *s, int end, bench_mark *k)
{
	if (end) {
		k->wall = coli_now_s();
		k->cpu = coli_cpu_s();
	}
	memset(&k->ex, 0, sizeof k->ex);
	if (st)
		expert_stats_snapshot(st, &k->ex);
	k->tm = *coli_state_timing(s);
	if (!end) {
		k->cpu = coli_cpu_s();
		k->wall = coli_now_s();
	}
}

int cmd_bench(int argc, char **argv)
{
	coli_err err = { 0 };
	coli_engine_flags fl;
	const char *dir_arg = NULL;
	struct bench_args b = { .n_prompt = 64, .n_gen = 32, .seed = 1, .kernel_seconds = 3.0, .kernels = 1 };
	int status = COLI_EXIT_FAIL;
	char dir[4096], heat_dir[4200];
	coli_model *m = NULL;
	coli_state *s = NULL;
	float *logits = NULL, *draft = NULL;
	int *toks = NULL;
	expert_trace trace = { 0 };
	json_t *out = NULL;
	if (cli_engine_args("bench", &fl, NULL, argc, argv, bench_flag, &b, &dir_arg, usage, &status))
		goto out;
	if (coli_model_dir_resolve(dir_arg, dir, sizeof dir, &err))
		goto fail;
	if (b.cold) {
		fl.opts.no_heat = 1; /* a cold run must not warm-start from history */
		if (fl.opts.store.direct < 0)
			fl.opts.store.direct = 1; /* nor read through the page cache (here and in --draft's engine) */
	}
	/* heat persistence only where --cache-dir names a place for it */
	if (fl.opts.cache_dir && !fl.opts.no_heat &&
	    coli_engine_heat_dir(fl.opts.cache_dir, heat_dir, sizeof heat_dir, NULL, &err))
		goto fail;
	/* prompt positions per forward call: --prefill-batch, as the engine's
	 * chunks (64 when not given, this command's figure so far) */
	const int chunk = fl.opts.prefill_batch > 0 ? fl.opts.prefill_batch : 64;
	/* the automatic cache budget subtracts what this command allocates
	 * (one sequence of prompt + gen and the step state of its chunks,
	 * coli_state_new below), not the engine's --ctx x slots */
	const coli_model_plan plan = { .mtp = b.mtp, .ctx = (int)(b.n_prompt + b.n_gen + 1), .parallel = 1,
				       .state_batch = chunk, .heat_dir = fl.opts.cache_dir ? heat_dir : NULL };
	coli_model_opts mo;
	coli_engine_model_opts(&fl.opts, &plan, &mo);
	double t0 = coli_now_s();
	if (coli_model_open(dir, &mo, &m, &err))
		goto fail;
	double t_load = coli_now_s() - t0;
	const coli_config *c = &m->cfg;
	out = json_object();
	json_object_set_new(out, "model", json_string(dir));
	json_object_set_new(out, "threads", json_integer(coli_pool_size(m->pool)));
	json_object_set_new(out, "isa", json_string(coli_kernels_isa()));
	json_object_set_new(out, "act_quant", json_string(coli_act_quant_name(m->act_quant)));
	json_object_set_new(out, "load_seconds", json_real(t_load));
	json_object_set_new(out, "dense_bytes", json_integer((json_int_t)m->container->dense_bytes));

	/* the disk ceiling is measured before the model runs */
	store_iobench_report io_rep;
	int have_io = 0;
	if (b.io && c->n_routed_experts > 0) {
		store_iobench_opts io_o;
		memset(&io_o, 0, sizeof io_o);
		for (int l = 0; l < c->num_hidden_layers && !io_o.path; l++)
			io_o.path = m->container->expert_shard_paths[l];
		io_o.record = (int64_t)m->container->expert_record_size;
		io_o.seconds = 2.0;
		if (store_iobench_run(&io_o, &io_rep, &err) == 0)
			have_io = 1;
		else
			coli_err_clear(&err);
		/* The measurement's buffers (record x depth) are freed; restart
		 * the peak RSS (VmHWM) so vm_hwm_bytes is the model's alone. */
		FILE *cr = fopen("/proc/self/clear_refs", "w");
		if (cr) {
			fputs("5", cr);
			fclose(cr);
		}
	}
	if (b.cold)
		drop_expert_pages(m->container);

	toks = malloc(sizeof(int) * (size_t)(b.n_prompt + b.n_gen));
	logits = malloc(sizeof(float) * (size_t)c->vocab_size);
	draft = b.mtp ? malloc(sizeof(float) * (size_t)c->vocab_size) : NULL;
	if (!toks || !logits || (b.mtp && !draft)) {
		coli_err_set(&err, -ENOMEM, "out of memory");
		goto fail;
	}
	uint64_t rng = (uint64_t)b.seed * 0x9e3779b97f4a7c15ULL + 1;
	bench_random_tokens(&rng, toks, b.n_prompt, c->vocab_size);
	if (coli_state_new(m, (int)(b.n_prompt + b.n_gen + 1), chunk, &s, &err))
		goto fail;
	long drafted = 0, accepted = 0;
	int draft_tok = -1;
	if (b.mtp && !m->n_mtp) {
		coli_err_set(&err, -ENOTSUP, "%s has no MTP module", dir);
		goto fail;
	}
	if (b.warmup && !b.mtp) {
		/* the same prompt once, then forgotten: the timed prefill finds
		 * the experts it routes to already in the process (read from the
		 * page cache and their pages faulted in), as a server's later
		 * prompts do */
		if (coli_forward(m, s, toks, (int)b.n_prompt, logits, 0, &err))
			goto fail;
		coli_state_rewind(s, 0);
	}
	const expert_stats *st = m->store ? expert_store_stats(m->store) : NULL;
	bench_mark p0, p1, d0, d1;
	bench_mark_take(st, s, 0, &p0);
	if (!b.mtp) {
		if (coli_forward(m, s, toks, (int)b.n_prompt, logits, 0, &err))
			goto fail;
	} else {
		/* the MTP cache needs an entry per position: prefill one by one */
		for (long i = 0; i < b.n_prompt; i++) {
			int next = i + 1 < b.n_prompt ? toks[i + 1] : -1;
			if (coli_forward(m, s, toks + i, 1, logits, 0, &err))
				goto fail;
			if (next < 0)
				next = coli_argmax(logits, c->vocab_size);
			if (coli_forward_mtp(m, s, coli_state_seq(s), coli_state_hidden(s, 0), &next, 1, draft, &err))
				goto fail;
		}
		draft_tok = coli_argmax(draft, c->vocab_size);
	}
	bench_mark_take(st, s, 1, &p1);
	double t_prefill = p1.wall - p0.wall;
	double cpu_prefill = p1.cpu - p0.cpu;
	json_t *pf = json_object();
	json_object_set_new(pf, "tokens", json_integer(b.n_prompt));
	json_object_set_new(pf, "chunk", json_integer(b.mtp ? 1 : chunk));
	json_object_set_new(pf, "seconds", json_real(t_prefill));
	json_object_set_new(pf, "tokens_per_s", json_real(b.n_prompt / t_prefill));
	json_object_set_new(pf, "cpu_ms_per_token", json_real(1000.0 * cpu_prefill / b.n_prompt));
	json_object_set_new(pf, "time_split",
			    time_split_json(&p1.tm, &p0.tm, p1.ex.wait_seconds - p0.ex.wait_seconds, b.n_prompt));
	json_object_set_new(out, "prefill", pf);

	/* decode, recording the routing trace */
	const int L = c->num_hidden_layers, K = c->num_experts_per_tok;
	trace.n_layers = L;
	trace.n_experts = c->n_routed_experts;
	trace.top_k = K;
	trace.ids = malloc(sizeof(int32_t) * (size_t)b.n_gen * L * (K > 0 ? K : 1));
	if (!trace.ids) {
		coli_err_set(&err, -ENOMEM, "out of memory");
		goto fail;
	}
	bench_mark_take(st, s, 0, &d0);
	for (long g = 0; g < b.n_gen; g++) {
		int tok = coli_argmax(logits, c->vocab_size);
		if (coli_forward(m, s, &tok, 1, logits, 0, &err))
			goto fail;
		if (b.mtp) {
			/* the draft made one step ago predicted the token after tok */
			int next = coli_argmax(logits, c->vocab_size);
			drafted++;
			accepted += draft_tok == next;
			if (coli_forward_mtp(m, s, coli_state_seq(s), coli_state_hidden(s, 0), &next, 1, draft, &err))
				goto fail;
			draft_tok = coli_argmax(draft, c->vocab_size);
		}
		const coli_routing *r = coli_state_routing(s);
		for (int l = 0; l < L; l++)
			for (int k = 0; k < K; k++)
				trace.ids[((size_t)g * L + l) * K + k] =
					coli_config_layer_is_moe(c, l) ? r->experts[(size_t)l * K + k] : -1;
		trace.n_tokens++;
	}
	bench_mark_take(st, s, 1, &d1);
	double t_decode = d1.wall - d0.wall;
	double cpu_decode = d1.cpu - d0.cpu;
	json_t *dc = json_object();
	json_object_set_new(dc, "tokens", json_integer(b.n_gen));
	json_object_set_new(dc, "seconds", json_real(t_decode));
	json_object_set_new(dc, "tokens_per_s", json_real(b.n_gen / t_decode));
	json_object_set_new(dc, "ms_per_token", json_real(1000.0 * t_decode / b.n_gen));
	/* CPU time (all threads): on a shared machine wall time also counts
	 * the cores other processes took; cpu_share says how much we got */
	json_object_set_new(dc, "cpu_ms_per_token", json_real(1000.0 * cpu_decode / b.n_gen));
	json_object_set_new(dc, "cpu_share", json_real(cpu_decode / t_decode / coli_pool_size(m->pool)));
	json_object_set_new(dc, "time_split",
			    time_split_json(&d1.tm, &d0.tm, d1.ex.wait_seconds - d0.ex.wait_seconds, b.n_gen));
	json_object_set_new(dc, "breakdown", breakdown_json(m, &d0.tm, &d1.tm, b.n_gen, 1000.0 * cpu_decode / b.n_gen));
	json_object_set_new(out, "decode", dc);
	if (b.mtp) {
		json_t *mj = json_object();
		json_object_set_new(mj, "drafts", json_integer(drafted));
		json_object_set_new(mj, "accepted", json_integer(accepted));
		json_object_set_new(mj, "acceptance", drafted ? json_real((double)accepted / drafted) : json_null());
		json_object_set_new(out, "mtp", mj);
	}
	free(draft);
	draft = NULL;

	if (st)
		experts_json(out, &d0.ex, &d1.ex, &trace, b.n_gen, t_decode, have_io ? &io_rep : NULL);
	/* --draft MODE: drafting against none, through the engine (the
	 * model opened above is freed first: the engine loads its own) */
	if (fl.opts.draft != COLI_DRAFT_UNSET && fl.opts.draft != COLI_DRAFT_OFF) {
		coli_state_free(s);
		s = NULL;
		coli_model_free(m);
		m = NULL;
		json_t *dj = bench_draft_run(&fl.opts, dir, (int)b.n_prompt, (int)b.n_gen, fl.opts.draft, (uint64_t)b.seed, &err);
		if (!dj)
			goto fail;
		json_object_set_new(out, "draft", dj);
	}
	long long hwm = vm_hwm_bytes();
	json_object_set_new(out, "vm_hwm_bytes", hwm >= 0 ? json_integer(hwm) : json_null());
	/* free the model before the kernel figures so memory is available */
	coli_state_free(s);
	s = NULL;
	if (b.kernels) {
		coli_pool *p = coli_pool_new(fl.opts.threads);
		json_t *k = p ? coli_bench_kernels(p, b.kernel_seconds) : NULL;
		coli_pool_free(p);
		json_object_set_new(out, "kernels", k ? k : json_null());
	}
	int printed = cli_print_json(out, JSON_INDENT(2));
	out = NULL; /* released by cli_print_json */
	if (printed) {
		coli_err_set(&err, -ENOMEM, "out of memory");
		goto fail;
	}
	status = COLI_EXIT_OK;
	goto out;
fail:
	cli_errorf("bench", "%s", err.msg);
out:
	json_decref(out);
	free(trace.ids);
	free(toks);
	free(logits);
	free(draft);
	coli_state_free(s);
	coli_model_free(m);
	coli_engine_flags_free(&fl);
	return status;
}
