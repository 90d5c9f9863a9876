/* expert_store_mirror.h - partial mirrors: the plan file naming the expert
 * records a mirror directory holds (format in expert_store_mirror.c).
 *
 * Written by `coli atlas --plan-mirror SIZE --write DIR`, read by the
 * expert store when it opens a mirror (expert_store_io.c) and by
 * `coli doctor --mirror DIR`. Any thread; no global state. */
#ifndef COLI_EXPERT_STORE_MIRROR_H
#define COLI_EXPERT_STORE_MIRROR_H

#include <stddef.h>
#include <stdint.h>

#include "coli_err.h"
#include "model_container.h"

#define EXPERT_MIRROR_PLAN_FILE "mirror-plan.json"
#define EXPERT_MIRROR_PLAN_VERSION 1
#define EXPERT_MIRROR_PART_DIR "partial"

typedef struct expert_mirror_plan {
	int n_layers, n_experts;
	uint64_t record_size;
	uint8_t *has;          /* [n_layers * n_experts] 1 = record in the mirror */
	char **files;          /* [n_layers] shard file relative to the mirror
	                        * directory ("partial/shard-003.bin"), NULL
	                        * for a layer with no planned record */
	int64_t n_records;     /* planned records */
	uint64_t bytes;        /* n_records * record_size */
	double share;          /* expected share of reads (0..1), as planned */
	char source[256];      /* what the share was computed from */
} expert_mirror_plan;

/* An empty plan for container c (every has[] 0, no files). NULL when out
 * of memory. */
expert_mirror_plan *expert_mirror_plan_new(const coli_container *c);
void expert_mirror_plan_free(expert_mirror_plan *p);
/* Record (layer, e) planned; sets the layer's file name. 0 or -ENOMEM. */
int expert_mirror_plan_add(expert_mirror_plan *p, const coli_container *c, int layer, int e);

/* DIR/mirror-plan.json of container c into *out. -ENOENT (err set) when
 * DIR has no plan (a full mirror); any other negative errno with one line
 * in err naming the file and what is wrong (bad JSON, another version,
 * another model or record size, a record out of range, a path leaving
 * DIR). */
int expert_mirror_plan_load(const char *dir, const coli_container *c, expert_mirror_plan **out,
			    coli_err *err);
/* Write p as DIR/mirror-plan.json (util_file.h's crash-safe replace). */
int expert_mirror_plan_save(const char *dir, const coli_container *c, const expert_mirror_plan *p,
			    coli_err *err);

#endif
