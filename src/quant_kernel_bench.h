/* quant_kernel_bench.h - how close the kernels get to the machine's memory
 * bandwidth (a decode step is weight-bandwidth bound).
 *
 * Measures, with the pool's threads:
 *   triad  STREAM-style a[i] = b[i] + s*c[i] over 3 arrays well beyond the
 *          last-level cache; GB/s counts 12 bytes per element (STREAM's
 *          convention, write-allocate traffic not counted); best run.
 *   int4   coli_matvec on GLM-5 shapes (expert gate/up 2048x6144, expert
 *          down 6144x2048, q_b-like 16384x2048), cycling through a weight
 *          set larger than the LLC so nothing stays cached; GB/s counts
 *          the weight + scale bytes streamed per second; a pass streams
 *          the whole set once and the best pass is reported (mean too).
 *   int8   the same shapes in int8.
 *   cache_resident_1thread  the kernels' own ceiling: one thread, a
 *          256x2048 matrix that stays in L2 (threads x this against the
 *          triad tells compute bound from memory bound).
 *   cache_resident_1thread_by_isa  the same for each code path the CPU
 *          has ("avx512", "avx2", "generic"); "isa" names the one in use.
 * Each kernel figure carries its ratio to the triad bandwidth.
 *
 * Uses about 1 GiB of memory (more when the LLC is larger than 512 MiB)
 * for about seconds_budget seconds (<= 0: 3 s). Returns a new object, or
 * NULL when the memory could not be had:
 *   { "isa": "avx512", "threads": N, "llc_bytes": B, "weight_set_bytes": B,
 *     "triad": { "array_bytes", "runs", "gbps" },
 *     "int4": [ { "shape": "2048x6144", "what", "matrix_bytes", "matrices",
 *                 "passes", "us_per_call", "gbps", "mean_gbps",
 *                 "ratio_to_triad" }, ... ],
 *     "int8": [ same ],
 *     "cache_resident_1thread": { "int4": { "shape", "ns_per_block",
 *                                           "gbps_per_thread" }, "int8": same },
 *     "cache_resident_1thread_by_isa": { "avx2": { "int4", "int8" as
 *                                        above }, ... } }
 * The kernel code path is forced per entry of the by_isa figures, so no
 * other thread may run kernels during the call. */
#ifndef COLI_BENCH_KERNELS_H
#define COLI_BENCH_KERNELS_H

#include <jansson.h>

#include "quant_kernels.h"

json_t *coli_bench_kernels(coli_pool *p, double seconds_budget);

#endif
