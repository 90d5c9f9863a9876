/* store_iobench.c - see store_iobench.h. */
#include "config.h"

#include "store_iobench.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <liburing.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "coli_log.h"
#include "util_size_parse.h"
#include "util_time.h"

#define MiB (1024LL * 1024)

const char *store_iobench_fs_name(long t, int *network)
{
	static const struct { unsigned long magic; const char *name; int net; } fs[] = {
		{ 0xEF53, "ext4", 0 }, { 0x58465342, "xfs", 0 }, { 0x9123683E, "btrfs", 0 },
		{ 0x01021994, "tmpfs", 0 }, { 0x794c7630, "overlay", 0 }, { 0x2fc12fc1, "zfs", 0 },
		{ 0xF2F52010, "f2fs", 0 }, { 0x6969, "nfs", 1 }, { 0x517B, "smb", 1 },
		{ 0xFF534D42, "cifs", 1 }, { 0xFE534D42, "smb2", 1 }, { 0x65735546, "fuse", 1 },
		{ 0x01021997, "9p", 1 }, { 0x00C36400, "ceph", 1 },
	};
	for (size_t i = 0; i < sizeof fs / sizeof fs[0]; i++)
		if ((unsigned long)(unsigned int)t == fs[i].magic) {
			if (network)
				*network = fs[i].net;
			return fs[i].name;
		}
	if (network)
		*network = 0;
	return NULL;
}

double store_iobench_decode_ceiling(double bps, int64_t bytes_per_token, double hit)
{
	double miss = (1.0 - hit) * (double)bytes_per_token;
	return miss > 0 ? bps / miss : 0;
}

static int read_int_file(const char *path)
{
	FILE *f = fopen(path, "r");
	int v = -1;
	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

/* Block device behind `path`: name, rotational, virtual. */
static void describe_device(const char *path, store_iobench_report *r)
{
	struct stat st;
	r->rotational = -1;
	if (stat(path, &st))
		return;
	char sys[128], real[PATH_MAX];
	snprintf(sys, sizeof sys, "/sys/dev/block/%u:%u", major(st.st_dev), minor(st.st_dev));
	if (!realpath(sys, real))
		return;
	char q[PATH_MAX + 32];
	/* A partition has no queue/ of its own: use its parent disk. */
	snprintf(q, sizeof q, "%s/queue/rotational", real);
	if (access(q, R_OK)) {
		char *slash = strrchr(real, '/');
		if (slash)
			*slash = '\0';
		snprintf(q, sizeof q, "%s/queue/rotational", real);
	}
	const char *name = strrchr(real, '/');
	snprintf(r->device, sizeof r->device, "%.63s", name ? name + 1 : real);
	r->rotational = read_int_file(q);
	r->virtual_disk = !strncmp(r->device, "vd", 2) || !strncmp(r->device, "xvd", 3) ||
			  strstr(real, "/virtio") != NULL;
}

static int make_test_file(const char *dir, int64_t bytes, char *out, size_t outsz, coli_err *err)
{
	snprintf(out, outsz, "%s/.coli-iobench-XXXXXX", dir);
	int fd = mkstemp(out);
	if (fd < 0)
		return coli_err_set(err, -errno, "%s: cannot create a test file: %s", dir, strerror(errno));
	size_t chunk = 8 * MiB;
	uint64_t *buf = malloc(chunk);
	int rc = 0;
	if (!buf) {
		rc = coli_err_set(err, -ENOMEM, "out of memory");
		goto out;
	}
	/* Non-zero, non-repeating data so no layer can compress it away. */
	uint64_t x = 0x9e3779b97f4a7c15ULL;
	for (int64_t off = 0; off < bytes; off += (int64_t)chunk) {
		size_t n = bytes - off < (int64_t)chunk ? (size_t)(bytes - off) : chunk;
		for (size_t i = 0; i < n / 8; i++) {
			x ^= x << 13; x ^= x >> 7; x ^= x << 17;
			buf[i] = x;
		}
		for (size_t done = 0; done < n;) {
			ssize_t w = pwrite(fd, (char *)buf + done, n - done, off + (off_t)done);
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0) {
				rc = coli_err_set(err, w < 0 ? -errno : -ENOSPC, "%s: writing the test file: %s", out,
						  strerror(w < 0 ? errno : ENOSPC));
				goto out;
			}
			done += (size_t)w;
		}
	}
	if (fsync(fd))
		rc = coli_err_set(err, -errno, "%s: fsync: %s", out, strerror(errno));
out:
	free(buf);
	close(fd);
	if (rc)
		unlink(out);
	return rc;
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Random reads of `block` bytes at depth qd for `secs` seconds. */
static void run_test(int fd, int open_errno, int64_t fsize, store_iobench_test *t, double secs)
{
	struct io_uring ring;
	void *bufs = NULL;
	int ring_ok = 0;
	if (fd < 0) {
		snprintf(t->note, sizeof t->note, "open%s: %s", t->direct ? " O_DIRECT" : "", strerror(open_errno));
		return;
	}
	if (io_uring_queue_init((unsigned)t->qd, &ring, 0) < 0) {
		snprintf(t->note, sizeof t->note, "io_uring unavailable");
		goto out;
	}
	ring_ok = 1;
	if (posix_memalign(&bufs, 4096, (size_t)t->block * (size_t)t->qd)) {
		snprintf(t->note, sizeof t->note, "out of memory");
		goto out;
	}
	if (!t->direct)
		posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	uint64_t seed = 0x2545F4914F6CDD1DULL ^ (uint64_t)t->block ^ ((uint64_t)t->direct << 40);
	uint64_t slots = (uint64_t)((fsize - t->block) / 4096) + 1;
	uint64_t *offs = calloc((size_t)t->qd, sizeof *offs);
	if (!offs)
		goto out;
	double t0 = coli_now_s(), end = t0 + secs;
	int inflight = 0, stop = 0, failed = 0;
	uint64_t bytes = 0;
	for (int i = 0; i < t->qd; i++) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
		offs[i] = rnd(&seed) % slots * 4096;
		io_uring_prep_read(sqe, fd, (char *)bufs + (size_t)i * (size_t)t->block, (unsigned)t->block, offs[i]);
		io_uring_sqe_set_data64(sqe, (uint64_t)i);
		inflight++;
	}
	io_uring_submit(&ring);
	while (inflight > 0) {
		struct io_uring_cqe *cqe;
		if (io_uring_wait_cqe(&ring, &cqe) < 0)
			break;
		int i = (int)io_uring_cqe_get_data64(cqe);
		int res = cqe->res;
		io_uring_cqe_seen(&ring, cqe);
		inflight--;
		if (res < 0) {
			if (!failed++)
				snprintf(t->note, sizeof t->note, "read: %s", strerror(-res));
			stop = 1;
			continue;
		}
		bytes += (uint64_t)res;
		t->ops++;
		if (!t->direct)
			posix_fadvise(fd, (off_t)offs[i], t->block, POSIX_FADV_DONTNEED);
		if (!stop && coli_now_s() >= end)
			stop = 1;
		if (stop)
			continue;
		struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
		offs[i] = rnd(&seed) % slots * 4096;
		io_uring_prep_read(sqe, fd, (char *)bufs + (size_t)i * (size_t)t->block, (unsigned)t->block, offs[i]);
		io_uring_sqe_set_data64(sqe, (uint64_t)i);
		io_uring_submit(&ring);
		inflight++;
	}
	t->seconds = coli_now_s() - t0;
	free(offs);
	if (!failed && t->ops > 0 && t->seconds > 0) {
		t->ok = 1;
		t->iops = (double)t->ops / t->seconds;
		t->bytes_per_s = (double)bytes / t->seconds;
	}
out:
	if (ring_ok)
		io_uring_queue_exit(&ring);
	free(bufs);
}

int store_iobench_run(const store_iobench_opts *o, store_iobench_report *r, coli_err *err)
{
	memset(r, 0, sizeof *r);
	struct stat st;
	if (!o->path || stat(o->path, &st))
		return coli_err_set(err, -errno, "%s: %s", o->path ? o->path : "(null)", strerror(errno));
	int64_t rec = o->record > 0 ? o->record : 16 * MiB;
	if (rec % 4096)
		return coli_err_set(err, -EINVAL, "--size: %lld is not a multiple of 4096", (long long)rec);
	double secs = o->seconds > 0 ? o->seconds : 3.0;
	struct statfs sf;
	if (statfs(o->path, &sf) == 0) {
		const char *n = store_iobench_fs_name((long)sf.f_type, &r->network);
		if (n)
			snprintf(r->fs_type, sizeof r->fs_type, "%s", n);
		else
			snprintf(r->fs_type, sizeof r->fs_type, "0x%lx", (unsigned long)sf.f_type);
	}
	describe_device(o->path, r);
	int rc = 0;
	if (S_ISDIR(st.st_mode)) {
		int64_t want = o->file_bytes > 0 ? o->file_bytes : 2048 * MiB;
		struct statvfs vf;
		if (o->file_bytes <= 0 && statvfs(o->path, &vf) == 0) {
			int64_t free4 = (int64_t)vf.f_bavail * (int64_t)vf.f_frsize / 4;
			if (want > free4)
				want = free4;
		}
		want = want / 4096 * 4096;
		if (want < 2 * rec)
			return coli_err_set(err, -ENOSPC, "%s: too little free space for a %lld-byte test file",
					    o->path, (long long)(2 * rec));
		coli_info("iobench: writing a %lld MiB test file in %s", (long long)(want / MiB), o->path);
		if ((rc = make_test_file(o->path, want, r->file, sizeof r->file, err)) < 0)
			return rc;
		r->created = 1;
		r->file_bytes = want;
	} else {
		snprintf(r->file, sizeof r->file, "%s", o->path);
		r->file_bytes = (int64_t)st.st_size;
		if (r->file_bytes < rec)
			return coli_err_set(err, -EINVAL, "%s: file smaller than --size %lld", o->path, (long long)rec);
	}
	/* Open both modes now and unlink a temporary file at once, so it is
	 * gone however the run ends (Ctrl-C included). */
	int fds[2], errs[2] = { 0, 0 };
	fds[0] = open(r->file, O_RDONLY | O_CLOEXEC);
	errs[0] = errno;
	fds[1] = open(r->file, O_RDONLY | O_CLOEXEC | O_DIRECT);
	errs[1] = errno;
	if (r->created)
		unlink(r->file);
	if (fds[0] < 0) {
		if (fds[1] >= 0)
			close(fds[1]);
		return coli_err_set(err, -errs[0], "%s: %s", r->file, strerror(errs[0]));
	}
	const int64_t blocks[2] = { 4096, rec };
	const int qds[2] = { o->qd_small > 0 ? o->qd_small : 32, o->qd_large > 0 ? o->qd_large : 8 };
	for (int b = 0; b < 2; b++)
		for (int d = 1; d >= 0; d--) {
			store_iobench_test *t = &r->tests[r->n_tests++];
			t->block = blocks[b];
			t->qd = qds[b];
			t->direct = d;
			run_test(fds[d], errs[d], r->file_bytes, t, secs);
			if (b == 1 && t->ok && t->bytes_per_s > r->best_large_bps)
				r->best_large_bps = t->bytes_per_s;
		}
	r->bytes_per_token = (int64_t)(o->experts_per_token > 0 ? o->experts_per_token : 8) *
			     (int64_t)(o->moe_layers > 0 ? o->moe_layers : 75) * rec;
	close(fds[0]);
	if (fds[1] >= 0)
		close(fds[1]);
	return 0;
}

void store_iobench_print(FILE *f, const store_iobench_report *r)
{
	char b1[32], b2[32];
	fprintf(f, "file: %s (%s%s)\n", r->file, size_format(r->file_bytes, b1, sizeof b1),
		r->created ? ", temporary, removed" : "");
	fprintf(f, "filesystem: %s%s; device: %s%s%s\n", r->fs_type, r->network ? " (network)" : "",
		r->device[0] ? r->device : "unknown",
		r->rotational == 1 ? ", rotational" : r->rotational == 0 ? ", solid state" : "",
		r->virtual_disk ? ", virtual disk" : "");
	fprintf(f, "%-10s %-9s %4s %12s %10s\n", "block", "mode", "qd", "IOPS", "GB/s");
	for (int i = 0; i < r->n_tests; i++) {
		const store_iobench_test *t = &r->tests[i];
		if (!t->ok) {
			fprintf(f, "%-10s %-9s %4d %12s %10s  (%s)\n", size_format(t->block, b2, sizeof b2),
				t->direct ? "direct" : "buffered", t->qd, "n/a", "n/a", t->note);
			continue;
		}
		fprintf(f, "%-10s %-9s %4d %12.0f %10.3f\n", size_format(t->block, b2, sizeof b2),
			t->direct ? "direct" : "buffered", t->qd, t->iops, t->bytes_per_s / 1e9);
	}
	double gbs = r->best_large_bps / 1e9;
	if (r->best_large_bps <= 0) {
		fprintf(f, "no large-block figure: cannot estimate decode speed\n");
		return;
	}
	if (gbs < 1.0)
		fprintf(f, "warning: %.2f GB/s is below 1 GB/s; expert streaming will dominate decode time\n", gbs);
	if (r->network)
		fprintf(f, "warning: %s is a network filesystem: latency and bandwidth vary; copy the model to a local NVMe drive\n",
			r->fs_type);
	if (r->rotational == 1 && r->virtual_disk)
		fprintf(f, "note: %s reports itself rotational, as virtual disks often do whatever backs them; "
			"trust the measured figures above\n", r->device);
	else if (r->rotational == 1)
		fprintf(f, "warning: %s is a rotational disk: random expert reads will be very slow; use an SSD/NVMe\n",
			r->device);
	if (r->virtual_disk)
		fprintf(f, "note: %s is a virtual disk: figures depend on the host and its neighbours\n", r->device);
	fprintf(f, "decode ceiling at %.2f GB/s with %s of experts per token (all misses): %.3f tok/s; "
		"50%% hits: %.3f; 90%% hits: %.3f tok/s\n", gbs, size_format(r->bytes_per_token, b1, sizeof b1),
		store_iobench_decode_ceiling(r->best_large_bps, r->bytes_per_token, 0),
		store_iobench_decode_ceiling(r->best_large_bps, r->bytes_per_token, 0.5),
		store_iobench_decode_ceiling(r->best_large_bps, r->bytes_per_token, 0.9));
}

int store_iobench_print_json(FILE *f, const store_iobench_report *r)
{
	json_t *tests = json_array();
	for (int i = 0; i < r->n_tests; i++) {
		const store_iobench_test *t = &r->tests[i];
		json_t *o = json_pack("{s:I,s:s,s:i,s:b}", "block", (json_int_t)t->block,
				      "mode", t->direct ? "direct" : "buffered", "qd", t->qd, "ok", t->ok);
		if (t->ok) {
			json_object_set_new(o, "iops", json_real(t->iops));
			json_object_set_new(o, "bytes_per_s", json_real(t->bytes_per_s));
			json_object_set_new(o, "gb_per_s", json_real(t->bytes_per_s / 1e9));
			json_object_set_new(o, "seconds", json_real(t->seconds));
			json_object_set_new(o, "ops", json_integer((json_int_t)t->ops));
		} else {
			json_object_set_new(o, "error", json_string(t->note));
		}
		json_array_append_new(tests, o);
	}
	json_t *root = json_pack("{s:s,s:b,s:I,s:s,s:b,s:s,s:b,s:o,s:I,s:f,s:f,s:f}",
				 "file", r->file, "temporary", r->created, "file_bytes", (json_int_t)r->file_bytes,
				 "filesystem", r->fs_type, "network", r->network, "device", r->device,
				 "virtual_disk", r->virtual_disk, "tests", tests,
				 "bytes_per_token", (json_int_t)r->bytes_per_token,
				 "decode_ceiling_tps", store_iobench_decode_ceiling(r->best_large_bps, r->bytes_per_token, 0),
				 "decode_ceiling_tps_50", store_iobench_decode_ceiling(r->best_large_bps, r->bytes_per_token, 0.5),
				 "decode_ceiling_tps_90", store_iobench_decode_ceiling(r->best_large_bps, r->bytes_per_token, 0.9));
	if (!root)
		return -ENOMEM;
	json_object_set_new(root, "rotational", r->rotational < 0 ? json_null() : json_boolean(r->rotational));
	int rc = json_dumpf(root, f, JSON_COMPACT) == 0 ? 0 : -EIO;
	fputc('\n', f);
	json_decref(root);
	return rc;
}
