/* kv_session_int.h - internals shared by kv_session.c (create, open,
 * append, truncate, sync) and kv_session_live.c (rows on demand,
 * compaction). Only those two files include it. */
#ifndef COLI_KV_SESSION_INT_H
#define COLI_KV_SESSION_INT_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "coli_err.h"
#include "kv_file.h"
#include "kv_format.h"

struct kv_session {
	int fd;
	int lock_fd;                 /* -1 for read-only sessions */
	int flags;
	int readonly;
	int persisted;
	int warned;
	int dirty;                   /* written since the last fsync */
	char dir[PATH_MAX];
	char name[KV_NAME_MAX + 1];
	char path[PATH_MAX];
	uint32_t n_layers, width;
	uint32_t index_layers, index_width; /* format 3 index key parts */
	uint64_t end;                /* end of the last good record */
	int n_tokens;
	kv_rec *recs;                /* every record, in file order */
	int n_recs, cap_recs;
	int *live;                   /* indices of data records holding live tokens */
	int n_live, cap_live;
};

static inline kv_geom session_geom(const kv_session *s)
{
	return kv_geom_of(s->n_layers, s->width, s->index_layers, s->index_width);
}

/* dir/.NAME.kv.tmp.PID into out (cap bytes). */
int kv_session_tmp_path(const char *dir, const char *name, char *out, size_t cap, coli_err *err);

#endif
