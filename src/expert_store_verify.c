/* expert_store_verify.c - the CRC-32C check of each expert record read
 * from disk (containers of format version 2, colitop-model(5)).
 *
 * Where: store_slot_loaded, when the last stripe of a record has landed,
 * on the thread that reaps the ring (the engine thread; the store holds no
 * lock). Once per read from disk, never per use: a record in RAM was
 * checked when it landed, so a cache hit costs nothing.
 *
 * What a mismatch does: it is counted (stats checksum_errors, /metrics
 * coli_expert_checksum_errors_total), logged as one error line naming the
 * layer, expert, shard and byte offset, and fails the slot. A failed slot
 * is never cached: store_slot_loaded drops it when nobody holds it, and the
 * acquire that holds it reports the error and clears it, so the next use
 * reads the record again; a damaged file that gets repaired, or a read
 * damaged on its way, serves again without a restart. Each record's
 * failure is logged once: failing again (the damage still on disk) is a
 * debug line, the counter keeps counting; once it verifies again an info
 * line says so and a later failure is reported anew.
 *
 * A record that came (in part) from a mirror and fails is not an error:
 * that mirror stops serving it, with one warning (store_io_mirror_failed),
 * and the record is read again from the primary, whose copy decides.
 *
 * Cost: one pass over the record at the hardware CRC-32C rate
 * (util_crc32c.c), measured against the drive in bench/README.md
 * ("Checksums"); --no-verify-checksums skips it. */
#include "config.h"

#include "expert_store_int.h"

#include <stdlib.h>

#include "coli_log.h"
#include "util_crc32c.h"

int store_verify_record(expert_store *s, int si)
{
	const store_slot *sl = &s->slots[si];
	const coli_container *c = s->c;
	if (s->o.no_checksums || !c->expert_crc || !c->expert_crc[sl->layer])
		return 0;
	const uint32_t want = c->expert_crc[sl->layer][sl->expert];
	const uint32_t got = crc32c_update(0, sl->buf, s->rec);
	const size_t id = (size_t)sl->layer * (size_t)s->n_experts + (size_t)sl->expert;
	expert_stats_note_checksum(s->stats, got == want);
	/* the copy on a mirror is bad: the primary's is read instead */
	if (got != want && (sl->from & ~1u) && store_io_mirror_failed(s, si))
		return STORE_REREAD;
	if (got == want) {
		if (s->crc_reported && s->crc_reported[id]) {
			s->crc_reported[id] = 0;
			coli_info("expert store: layer %d expert %d verifies again", sl->layer, sl->expert);
		}
		return 1;
	}
	/* the bitmap costs a few KB, and only once something failed */
	if (!s->crc_reported)
		s->crc_reported = calloc((size_t)s->n_layers * (size_t)s->n_experts, 1);
	const int again = s->crc_reported && s->crc_reported[id];
	if (s->crc_reported)
		s->crc_reported[id] = 1;
	store_io_refresh(s, sl->layer); /* a damaged file replaced by a sound one */
	coli_log(again ? COLI_LOG_DEBUG : COLI_LOG_ERROR,
		 "expert store: layer %d expert %d: CRC-32C mismatch in %s at offset %llu (%zu bytes): "
		 "read %08x, manifest.json says %08x; not cached, read again when next needed",
		 sl->layer, sl->expert, c->expert_shard_paths[sl->layer],
		 (unsigned long long)coli_container_expert_offset(c, sl->expert), s->rec, (unsigned)got,
		 (unsigned)want);
	return STORE_ECHECKSUM;
}
