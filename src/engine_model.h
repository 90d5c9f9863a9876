/* engine_model.h - the model a run opens, with what it will allocate
 * beside the weights: the engine for its slots (coli_engine_new) and the
 * commands that run the model on their own thread (coli bench) open it
 * the same way, each with its own plan, so the expert store's automatic
 * budget subtracts what that run really allocates. */
#ifndef COLI_ENGINE_MODEL_H
#define COLI_ENGINE_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "coli_err.h"
#include "engine.h"
#include "model.h"

/* What a run allocates beside the weights and what it loads
 * (expert_store.h: kv_ctx, kv_ram, kv_parallel, kv_cap, state_batch,
 * heat_dir). */
typedef struct coli_model_plan {
	int mtp;              /* load the MTP module (when the model has one) */
	int ctx, kv_ram, parallel; /* its KV: ctx positions, kv_ram of them in
	                       * RAM (0 = all), for each of `parallel`
	                       * sequences (0 and COLI_PARALLEL_AUTO as the
	                       * engine's --parallel) */
	int64_t kv_cap;       /* at most this much KV is subtracted; 0 = no cap */
	int state_batch;      /* rows per forward call of its step state */
	const char *heat_dir; /* where routing heat is loaded from and saved
	                       * to (coli_engine_heat_dir); NULL, or the
	                       * options' no_heat: nowhere */
} coli_model_plan;

/* The options to open a model with for engine options o: their threads,
 * activations and expert store options, and the plan's MTP module, KV,
 * step state and heat directory. plan NULL: no plan (the store's
 * defaults, no heat, the model options' MTP default). */
void coli_engine_model_opts(const coli_engine_opts *o, const coli_model_plan *plan, coli_model_opts *mo);

/* CACHE_DIR/hot-experts into buf, created when missing (mkdir -p); *made
 * (when made is not NULL) says whether it was missing, so that a start
 * that fails can remove what it made. */
int coli_engine_heat_dir(const char *cache_dir, char *buf, size_t size, int *made, coli_err *err);

#endif
