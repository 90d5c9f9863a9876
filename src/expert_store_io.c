/* expert_store_io.c - the io_uring reader behind the expert store.
 *
 * One ring per store (the engine thread's). A record read is split into
 * stripes when mirrors exist: stripe k of (layer, expert) goes to the drive
 * picked by a fixed hash of (layer, expert, k) against the drives' weights,
 * among the drives that hold that shard, so the same bytes always come from
 * the same drive (reproducible, and page caches do not overlap). Without
 * mirrors a record is one read.
 *
 * Completion handling, per stripe:
 *   -EAGAIN/-EINTR          resubmitted as is;
 *   short read              the rest is resubmitted (buffered fd if the
 *                           remainder is not 4096-aligned under O_DIRECT);
 *   -EINVAL under O_DIRECT  retried buffered;
 *   error/EOF on a mirror   the mirror is disabled with one warning and the
 *                           stripe is read again from the primary;
 *   error on the primary    retried on a mirror holding the shard (with a
 *                           warning), else the slot fails with that errno;
 *                           and if the shard's path now names another file
 *                           (restored by a rename), later reads use it
 *                           (store_io_refresh; also after a CRC mismatch).
 * Mirrors are opened read-only; nothing ever writes to them.
 *
 * Mirror validation: at open each mirror shard must exist with the size the
 * manifest gives, otherwise that shard is not read from that mirror (a
 * copy of some shards is fine). A mirror holding a plan file
 * (DIR/mirror-plan.json, expert_store_mirror.c) is a partial copy: only
 * the records it lists are read from it, from the sparse shard files it
 * names, striped as for a full mirror; everything else comes from the
 * primary. A bad plan leaves that mirror unused, with one warning naming
 * the file and the fault. A record from a mirror that fails its CRC-32C
 * (a hole, damage) is read again from the primary and that mirror stops
 * serving it, with one warning per mirror (store_io_mirror_failed).
 * sha256 of multi-GB shards at every start would cost minutes, so it is
 * checked only with opts.verify_mirrors (a partial mirror's planned
 * records are then checked against their CRC-32C instead); without it a
 * corrupted-but-right-sized mirror of a container without record
 * checksums (format 1) is the one case the store cannot catch.
 *
 * Fault injection (test builds, COLI_FAULT_INJECTION): environment
 * variables read at open, each naming the 1-based completion to corrupt:
 *   COLI_FAULT_READ_EIO=N     completion N fails with -EIO (on a mirror:
 *                             fallback; on the primary: a read error)
 *   COLI_FAULT_SHORT_READ=N   completion N returns half its length
 *   COLI_FAULT_READ_EAGAIN=N  completion N returns -EAGAIN
 *   COLI_FAULT_MIRROR_EIO=N   the Nth completion from a mirror fails
 *   COLI_FAULT_READ_FLIP=N    completion N lands with one bit flipped (a
 *                             read damaged on its way: the file is sound)
 *   COLI_FAULT_NO_DIRECT=1    O_DIRECT refused at open (buffered fallback) */
#include "config.h"

#include "expert_store_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "coli_log.h"
#include "expert_store_mirror.h"
#include "util_crc32c.h"
#include "util_sha256.h"
#include "util_size_parse.h"
#include "util_time.h"

#define DEFAULT_DEPTH 64
#define MIRROR_STRIPE (1u << 20)

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

/* Path of layer's shard relative to the model directory. */
static const char *shard_rel(const coli_container *c, int layer)
{
	const char *p = c->expert_shard_paths[layer];
	size_t n = c->dir ? strlen(c->dir) : 0;
	if (n && !strncmp(p, c->dir, n) && p[n] == '/')
		return p + n + 1;
	const char *b = strrchr(p, '/');
	static _Thread_local char buf[64];
	snprintf(buf, sizeof buf, "experts/%s", b ? b + 1 : p);
	return buf;
}

static int probe_direct(int fd)
{
	void *buf = NULL;
	if (posix_memalign(&buf, 4096, 4096))
		return 0;
	ssize_t r = pread(fd, buf, 4096, 0);
	free(buf);
	return r >= 0;
}

/* --verify-mirrors on a partial mirror: each planned record of layer l
 * against its CRC-32C (the shard's sha256 is the primary's, holes and
 * all); a record that fails is dropped from dr->has. Returns how many
 * failed; one warning names the first. */
static int verify_planned(expert_store *s, store_drive *dr, int fd, int l, const char *path)
{
	uint8_t *buf = malloc(s->rec);
	int bad = 0;
	for (int e = 0; buf && e < s->n_experts; e++) {
		size_t id = (size_t)l * (size_t)s->n_experts + (size_t)e;
		if (!dr->has[id])
			continue;
		off_t off = (off_t)coli_container_expert_offset(s->c, e);
		if (pread(fd, buf, s->rec, off) == (ssize_t)s->rec && crc32c_update(0, buf, s->rec) == s->c->expert_crc[l][e])
			continue;
		dr->has[id] = 0;
		if (!bad++)
			coli_warn("expert store: mirror %s: %s: layer %d expert %d fails its CRC-32C; read from the primary",
				  dr->dir, path, l, e);
	}
	free(buf);
	return bad;
}

static int open_drive(expert_store *s, int d, const char *dir, int want_direct, coli_err *err)
{
	store_drive *dr = &s->drives[d];
	dr->dir = strdup(dir);
	dr->fd_direct = malloc((size_t)s->n_layers * sizeof(int));
	dr->fd_buffered = malloc((size_t)s->n_layers * sizeof(int));
	for (int l = 0; l < s->n_layers; l++) {
		if (dr->fd_direct)
			dr->fd_direct[l] = -1;
		if (dr->fd_buffered)
			dr->fd_buffered[l] = -1;
	}
	if (!dr->dir || !dr->fd_direct || !dr->fd_buffered)
		return coli_err_set(err, -ENOMEM, "expert store: out of memory");
	dr->enabled = 1;
	dr->direct = want_direct;
	expert_mirror_plan *plan = NULL;
	if (d > 0) {
		coli_err pe;
		coli_err_clear(&pe);
		int prc = expert_mirror_plan_load(dir, s->c, &plan, &pe);
		if (prc < 0 && prc != -ENOENT) {
			coli_warn("expert store: mirror %s: %s; mirror not used", dir, pe.msg);
			dr->enabled = 0;
			return 0;
		}
		if (plan) {
			dr->has = plan->has; /* taken over */
			plan->has = NULL;
		}
	}
	int present = 0, wrong = 0, probed = 0;
	for (int l = 0; l < s->n_layers; l++) {
		if (!s->c->expert_shard_paths[l] || (plan && !plan->files[l]))
			continue;
		char path[4096];
		if (d == 0)
			snprintf(path, sizeof path, "%s", s->c->expert_shard_paths[l]);
		else
			snprintf(path, sizeof path, "%s/%s", dir, plan ? plan->files[l] : shard_rel(s->c, l));
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			if (d == 0)
				return coli_err_set(err, -errno, "expert store: %s: %s", path, strerror(errno));
			if (plan && !wrong++)
				coli_warn("expert store: mirror %s: %s (planned): %s; not used for that shard", dir, path,
					  strerror(errno));
			continue;
		}
		struct stat st;
		uint64_t want = s->c->expert_shard_sizes ? s->c->expert_shard_sizes[l] : 0;
		if (fstat(fd, &st) || (want && (uint64_t)st.st_size != want)) {
			if (d == 0) {
				close(fd);
				return coli_err_set(err, -EINVAL, "expert store: %s: size %lld, manifest says %llu",
						    path, (long long)st.st_size, (unsigned long long)want);
			}
			if (!wrong++)
				coli_warn("expert store: mirror %s: %s has the wrong size (%lld, expected %llu); not used for that shard",
					  dir, path, (long long)st.st_size, (unsigned long long)want);
			close(fd);
			continue;
		}
		if (plan && s->o.verify_mirrors && s->c->expert_crc && s->c->expert_crc[l])
			wrong += verify_planned(s, dr, fd, l, path);
		if (d > 0 && !plan && s->o.verify_mirrors && s->c->expert_shard_sha256 && s->c->expert_shard_sha256[l]) {
			char hex[65];
			coli_err e2;
			coli_err_clear(&e2);
			if (coli_sha256_file(path, hex, &e2) < 0 || strcmp(hex, s->c->expert_shard_sha256[l])) {
				coli_warn("expert store: mirror %s: %s %s; not used for that shard", dir, path,
					  e2.msg[0] ? e2.msg : "fails its sha256 check");
				wrong++;
				close(fd);
				continue;
			}
		}
		dr->fd_buffered[l] = fd;
		present++;
		if (dr->direct) {
			int dfd = open(path, O_RDONLY | O_CLOEXEC | O_DIRECT);
#ifdef COLI_FAULT_INJECTION
			/* COLI_FAULT_NO_DIRECT: act as a filesystem refusing O_DIRECT */
			if (dfd >= 0 && getenv("COLI_FAULT_NO_DIRECT")) {
				close(dfd);
				dfd = -1;
			}
#endif
			if (dfd >= 0 && (probed || probe_direct(dfd))) {
				dr->fd_direct[l] = dfd;
				probed = 1;
			} else {
				if (dfd >= 0)
					close(dfd);
				dr->direct = 0;
			}
		}
	}
	if (plan) {
		char b[32];
		coli_info("expert store: mirror %s is a partial copy: %lld records (%s), planned share %.1f%% of reads",
			  dir, (long long)plan->n_records, size_format((int64_t)plan->bytes, b, sizeof b),
			  100.0 * plan->share);
	}
	expert_mirror_plan_free(plan);
	if (d > 0) {
		if (!present) {
			coli_warn("expert store: mirror %s holds no usable shard; ignored", dir);
			dr->enabled = 0;
		} else {
			coli_info("expert store: mirror %s: %d shard(s) usable%s", dir, present,
				  wrong ? " (some rejected)" : "");
		}
	}
	return 0;
}

#ifdef COLI_FAULT_INJECTION
static uint64_t env_u64(const char *name)
{
	const char *v = getenv(name);
	return v ? strtoull(v, NULL, 10) : 0;
}
#endif

int store_io_open(expert_store *s, coli_err *err)
{
	unsigned depth = s->o.queue_depth > 0 ? (unsigned)s->o.queue_depth : DEFAULT_DEPTH;
	int rc = io_uring_queue_init(depth, &s->ring, 0);
	if (rc < 0)
		return coli_err_set(err, rc, "expert store: io_uring setup failed: %s", strerror(-rc));
	s->ring_ok = 1;
	s->ring_entries = depth;
	s->ios = calloc(depth, sizeof *s->ios);
	if (!s->ios)
		return coli_err_set(err, -ENOMEM, "expert store: out of memory");
	for (unsigned i = 0; i < depth; i++)
		s->ios[i].next_free = i + 1 < depth ? (int)i + 1 : -1;
	s->io_free = 0;
	int want_direct = s->o.direct != 0;
	if ((rc = open_drive(s, 0, s->c->dir ? s->c->dir : ".", want_direct, err)) < 0)
		return rc;
	s->n_drives = 1;
	s->direct = s->drives[0].direct;
	if (want_direct && !s->direct)
		coli_info("expert store: O_DIRECT refused by the filesystem of %s; using buffered reads",
			  s->c->dir ? s->c->dir : ".");
	else
		coli_info("expert store: %s reads", s->direct ? "O_DIRECT" : "buffered");
	expert_stats_set_drive(s->stats, 0, "primary", 1);
	for (int m = 0; s->o.mirrors && s->o.mirrors[m] && m < EXPERT_STORE_MAX_MIRRORS; m++) {
		int d = s->n_drives;
		if ((rc = open_drive(s, d, s->o.mirrors[m], want_direct, err)) < 0)
			return rc;
		s->n_drives++;
		expert_stats_set_drive(s->stats, d, s->o.mirrors[m], s->drives[d].enabled);
	}
	int any_weight = 0;
	for (int d = 0; d < s->n_drives; d++)
		any_weight |= s->o.mirror_weights[d] > 0;
	for (int d = 0; d < s->n_drives; d++)
		s->drives[d].weight = any_weight ? s->o.mirror_weights[d] : 1.0;
	s->stripe = s->n_drives > 1 && s->rec > MIRROR_STRIPE ? MIRROR_STRIPE : (uint32_t)s->rec;
	if (s->rec > 0x7fffffffu)
		return coli_err_set(err, -EINVAL, "expert store: record size %zu too large", s->rec);
#ifdef COLI_FAULT_INJECTION
	s->fault_eio = env_u64("COLI_FAULT_READ_EIO");
	s->fault_short = env_u64("COLI_FAULT_SHORT_READ");
	s->fault_eagain = env_u64("COLI_FAULT_READ_EAGAIN");
	s->fault_mirror = env_u64("COLI_FAULT_MIRROR_EIO");
	s->fault_flip = env_u64("COLI_FAULT_READ_FLIP");
#endif
	return 0;
}

void store_io_close(expert_store *s)
{
	for (int d = 0; d < 1 + EXPERT_STORE_MAX_MIRRORS; d++) {
		store_drive *dr = &s->drives[d];
		for (int l = 0; l < s->n_layers; l++) {
			if (dr->fd_direct && dr->fd_direct[l] >= 0)
				close(dr->fd_direct[l]);
			if (dr->fd_buffered && dr->fd_buffered[l] >= 0)
				close(dr->fd_buffered[l]);
		}
		free(dr->fd_direct);
		free(dr->fd_buffered);
		free(dr->has);
		free(dr->dir);
		memset(dr, 0, sizeof *dr);
	}
	if (s->ring_ok)
		io_uring_queue_exit(&s->ring);
	s->ring_ok = 0;
	free(s->ios);
	s->ios = NULL;
}

int store_io_holds(const expert_store *s, int d, int layer, int expert)
{
	const store_drive *dr = &s->drives[d];
	return dr->enabled && dr->fd_buffered[layer] >= 0 &&
	       (!dr->has || dr->has[(size_t)layer * (size_t)s->n_experts + (size_t)expert]);
}

/* Which drive serves stripe k of (layer, expert). */
static int pick_drive(const expert_store *s, int layer, int expert, uint32_t k)
{
	double total = 0;
	for (int d = 0; d < s->n_drives; d++)
		if (store_io_holds(s, d, layer, expert))
			total += s->drives[d].weight;
	if (total <= 0)
		return 0;
	uint64_t h = mix64(((uint64_t)(uint32_t)layer << 40) ^ ((uint64_t)(uint32_t)expert << 16) ^ k);
	double u = (double)(h >> 11) * (1.0 / 9007199254740992.0) * total;
	for (int d = 0; d < s->n_drives; d++) {
		if (!store_io_holds(s, d, layer, expert))
			continue;
		if (u < s->drives[d].weight)
			return d;
		u -= s->drives[d].weight;
	}
	return 0;
}

static int can_direct(const expert_store *s, int d, int layer)
{
	return s->drives[d].direct && s->drives[d].fd_direct[layer] >= 0;
}

static struct io_uring_sqe *get_sqe(expert_store *s)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&s->ring);
	if (!sqe) {
		io_uring_submit(&s->ring);
		s->unsubmitted = 0;
		sqe = io_uring_get_sqe(&s->ring);
	}
	return sqe;
}

static int io_issue(expert_store *s, int ii)
{
	store_io *io = &s->ios[ii];
	store_drive *dr = &s->drives[io->drive];
	uint32_t rest = io->len - io->done;
	uint64_t off = io->off + io->done;
	if (io->direct && ((off | rest | io->done) & 4095))
		io->direct = 0; /* unaligned remainder of a short read */
	int fd = io->direct ? dr->fd_direct[io->layer] : dr->fd_buffered[io->layer];
	io->fd = fd;
	struct io_uring_sqe *sqe = get_sqe(s);
	if (!sqe)
		return -EBUSY;
	io_uring_prep_read(sqe, fd, s->slots[io->slot].buf + io->buf_off + io->done, rest, off);
	io_uring_sqe_set_data64(sqe, (uint64_t)ii);
	s->unsubmitted++;
	return 0;
}

int store_io_submit(expert_store *s)
{
	if (!s->unsubmitted)
		return 0;
	int rc = io_uring_submit(&s->ring);
	s->unsubmitted = 0;
	return rc < 0 ? rc : 0;
}

static void io_put(expert_store *s, int ii)
{
	s->ios[ii].next_free = s->io_free;
	s->io_free = ii;
	if (--s->io_inflight == 0)
		expert_stats_note_busy(s->stats, coli_now_s() - s->busy_since);
}

static void io_done(expert_store *s, int ii, int error)
{
	store_io *io = &s->ios[ii];
	store_slot *sl = &s->slots[io->slot];
	if (error && !sl->error)
		sl->error = error;
	int si = io->slot;
	io_put(s, ii);
	if (--sl->pending == 0)
		store_slot_loaded(s, si);
}

static int fault_apply(expert_store *s, int res, const store_io *io)
{
#ifdef COLI_FAULT_INJECTION
	uint64_t n = ++s->fault_count;
	if (io->drive > 0) {
		uint64_t m = ++s->mirror_count;
		if (s->fault_mirror && m == s->fault_mirror)
			return -EIO;
	}
	if (s->fault_eio && n == s->fault_eio)
		return -EIO;
	if (s->fault_eagain && n == s->fault_eagain)
		return -EAGAIN;
	if (s->fault_flip && n == s->fault_flip && res > 0)
		s->slots[io->slot].buf[io->buf_off + io->done + (uint32_t)res / 2] ^= 0x10;
	if (s->fault_short && n == s->fault_short && res > 1) {
		int half = res / 2;
		if (half >= 4096)
			half &= ~4095;
		return half;
	}
#else
	(void)s;
	(void)io;
#endif
	return res;
}

static void mirror_disable(expert_store *s, int d, int res)
{
	if (!s->drives[d].enabled)
		return;
	s->drives[d].enabled = 0;
	expert_stats_set_drive(s->stats, d, NULL, 0);
	coli_warn("expert store: mirror %s disabled after a read error (%s); reading from the primary",
		  s->drives[d].dir, res < 0 ? strerror(-res) : "unexpected end of file");
}

int store_io_refresh(expert_store *s, int layer)
{
	store_drive *dr = &s->drives[0];
	const char *path = s->c->expert_shard_paths[layer];
	struct stat now, old;
	if (!dr->fd_buffered || dr->fd_buffered[layer] < 0 || stat(path, &now) ||
	    fstat(dr->fd_buffered[layer], &old) || (now.st_ino == old.st_ino && now.st_dev == old.st_dev))
		return 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	/* reads in flight hold their own reference to the old file */
	close(dr->fd_buffered[layer]);
	dr->fd_buffered[layer] = fd;
	if (dr->fd_direct[layer] >= 0) {
		/* opened before the old one closes, so its number differs:
		 * io_complete tells a stripe read from the old file by it */
		int dfd = open(path, O_RDONLY | O_CLOEXEC | O_DIRECT);
		close(dr->fd_direct[layer]);
		dr->fd_direct[layer] = dfd;
	}
	coli_warn("expert store: %s was replaced by another file; reading that one from now on", path);
	return 1;
}

static int io_complete(expert_store *s, int ii, int res)
{
	store_io *io = &s->ios[ii];
	res = fault_apply(s, res, io);
	if (res == -EAGAIN || res == -EINTR)
		return io_issue(s, ii);
	if (res > 0) {
		expert_stats_note_read(s->stats, io->drive, (uint64_t)res);
		s->slots[io->slot].from |= 1u << io->drive;
		io->done += (uint32_t)res;
		if (io->done < io->len)
			return io_issue(s, ii); /* short read: the rest */
		io_done(s, ii, 0);
		return 0;
	}
	/* Error, or end of file before the record ended. */
	expert_stats_note_drive_error(s->stats, io->drive);
	if (res == -EINVAL && io->direct) {
		io->direct = 0;
		return io_issue(s, ii);
	}
	io->tried |= 1u << io->drive;
	if (io->drive > 0) {
		mirror_disable(s, io->drive, res);
		if (!(io->tried & 1u)) {
			io->drive = 0;
			io->direct = can_direct(s, 0, io->layer);
			return io_issue(s, ii);
		}
	} else if (store_io_refresh(s, io->layer) ||
		   (io->fd != s->drives[0].fd_buffered[io->layer] && io->fd != s->drives[0].fd_direct[io->layer])) {
		/* read the whole stripe again, from the file now there (this
		 * stripe, or one issued before the reopen, read the old one) */
		io->done = 0;
		io->direct = can_direct(s, 0, io->layer);
		return io_issue(s, ii);
	} else {
		/* The primary failed: a mirror holding this shard may still
		 * have the bytes (the primary is never disabled). */
		for (int d = 1; d < s->n_drives; d++) {
			if (!store_io_holds(s, d, io->layer, s->slots[io->slot].expert) || (io->tried & (1u << d)))
				continue;
			coli_warn("expert store: read error on %s (%s); retrying from mirror %s",
				  s->c->expert_shard_paths[io->layer], res < 0 ? strerror(-res) : "end of file",
				  s->drives[d].dir);
			io->drive = d;
			io->direct = can_direct(s, d, io->layer);
			return io_issue(s, ii);
		}
	}
	io_done(s, ii, res < 0 ? res : -EIO);
	return 0;
}

int store_io_reap(expert_store *s, int wait)
{
	int n = 0;
	struct io_uring_cqe *cqe;
	if (wait && s->io_inflight == 0)
		return -EDEADLK; /* nothing can ever complete: a logic error */
	if (wait) {
		int rc = s->unsubmitted ? io_uring_submit_and_wait(&s->ring, 1)
					: io_uring_wait_cqe(&s->ring, &cqe);
		s->unsubmitted = 0;
		if (rc < 0 && rc != -EINTR)
			return rc;
	}
	while (io_uring_peek_cqe(&s->ring, &cqe) == 0) {
		int ii = (int)io_uring_cqe_get_data64(cqe);
		int res = cqe->res;
		io_uring_cqe_seen(&s->ring, cqe);
		int rc = io_complete(s, ii, res);
		if (rc < 0)
			io_done(s, ii, rc);
		n++;
	}
	if (s->unsubmitted)
		store_io_submit(s);
	return n;
}

int store_io_make_room(expert_store *s)
{
	int rc = store_io_submit(s);
	if (rc < 0)
		return rc;
	rc = store_io_reap(s, 1);
	return rc < 0 ? rc : 0;
}

static int io_get(expert_store *s)
{
	while (s->io_free < 0) {
		/* Ring full: push what is queued and make room. */
		int rc = store_io_make_room(s);
		if (rc < 0)
			return rc;
	}
	int ii = s->io_free;
	s->io_free = s->ios[ii].next_free;
	if (s->io_inflight++ == 0)
		s->busy_since = coli_now_s();
	return ii;
}

int store_io_queue(expert_store *s, int si)
{
	store_slot *sl = &s->slots[si];
	uint32_t nstripes = (uint32_t)((s->rec + s->stripe - 1) / s->stripe);
	sl->pending = (int)nstripes;
	sl->error = 0;
	sl->from = 0;
	for (uint32_t k = 0; k < nstripes; k++) {
		int ii = io_get(s);
		if (ii < 0) {
			/* Stripes never queued count as failed. */
			sl->error = ii;
			sl->pending -= (int)(nstripes - k);
			if (sl->pending == 0)
				store_slot_loaded(s, si);
			return ii;
		}
		store_io *io = &s->ios[ii];
		io->slot = si;
		io->layer = sl->layer;
		io->drive = pick_drive(s, sl->layer, sl->expert, k);
		io->direct = can_direct(s, io->drive, sl->layer);
		io->buf_off = k * s->stripe;
		io->len = (uint32_t)((s->rec - io->buf_off) < s->stripe ? s->rec - io->buf_off : s->stripe);
		io->done = 0;
		io->tried = 0;
		io->off = (uint64_t)sl->expert * s->rec + io->buf_off;
		int rc = io_issue(s, ii);
		if (rc < 0) {
			io_done(s, ii, rc);
			sl->pending -= (int)(nstripes - k - 1);
			return rc;
		}
	}
	return 0;
}

int store_io_mirror_failed(expert_store *s, int si)
{
	store_slot *sl = &s->slots[si];
	const size_t id = (size_t)sl->layer * (size_t)s->n_experts + (size_t)sl->expert;
	int any = 0;
	for (int d = 1; d < s->n_drives; d++) {
		store_drive *dr = &s->drives[d];
		if (!(sl->from & (1u << d)))
			continue;
		if (!dr->has) {
			/* a full mirror: from now on a record map (error path only) */
			dr->has = malloc((size_t)s->n_layers * (size_t)s->n_experts);
			if (!dr->has) {
				mirror_disable(s, d, -ENOMEM);
				any = 1;
				continue;
			}
			for (int l = 0; l < s->n_layers; l++)
				memset(dr->has + (size_t)l * (size_t)s->n_experts, dr->fd_buffered[l] >= 0,
				       (size_t)s->n_experts);
		}
		dr->has[id] = 0;
		any = 1;
		coli_log(dr->bad_warned ? COLI_LOG_DEBUG : COLI_LOG_WARN,
			 "expert store: mirror %s: layer %d expert %d fails its CRC-32C (damaged or missing "
			 "in the copy; coli doctor --mirror checks it); reading %s from the primary",
			 dr->dir, sl->layer, sl->expert, dr->bad_warned ? "it" : "it and any other such record");
		dr->bad_warned = 1;
	}
	if (!any)
		return 0;
	store_io_queue(s, si); /* a failure to queue finishes the slot itself */
	return 1;
}
