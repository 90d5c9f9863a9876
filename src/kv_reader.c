/* kv_reader.c - the io_uring ring behind kv_session_read_runs (the
 * design is in kv_reader.h). A short read (the kernel may return fewer
 * bytes than asked, e.g. across a page-cache boundary under memory
 * pressure) is queued again for its remainder; a read of 0 bytes means
 * the file ended before the record table said: -EIO, as kv_fmt_pread_full
 * reports it. */
#include "config.h"

#include "kv_reader.h"

#include <errno.h>
#include <liburing.h>
#include <stdlib.h>
#include <string.h>

struct kv_pending {
	int fd;
	unsigned char *buf;
	size_t len;          /* bytes still to read */
	uint64_t off;
};

struct kv_reader {
	struct io_uring ring;
	unsigned depth;
	struct kv_pending *p; /* (depth) the reads of the batch being built */
	unsigned n;           /* queued in p */
	uint64_t reads, rounds;
	int broken;           /* a submit failed with reads left in the SQ ring */
};

int kv_reader_new(unsigned depth, kv_reader **out, coli_err *err)
{
	*out = NULL;
	kv_reader *r = calloc(1, sizeof *r);
	if (!r || !(r->p = calloc(depth ? depth : 1, sizeof *r->p))) {
		free(r);
		return coli_err_set(err, -ENOMEM, "out of memory");
	}
	int rc = depth ? io_uring_queue_init(depth, &r->ring, 0) : -EINVAL;
	if (rc < 0) {
		free(r->p);
		free(r);
		return coli_err_set(err, rc, "session reader: io_uring setup failed: %s", strerror(-rc));
	}
	r->depth = depth;
	*out = r;
	return 0;
}

void kv_reader_free(kv_reader *r)
{
	if (!r)
		return;
	io_uring_queue_exit(&r->ring);
	free(r->p);
	free(r);
}

static void prep(kv_reader *r, unsigned i)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&r->ring);
	/* never NULL: at most depth reads are queued, each SQE is submitted
	 * before the next batch is prepared */
	const struct kv_pending *p = &r->p[i];
	unsigned len = p->len > (1u << 30) ? 1u << 30 : (unsigned)p->len;
	io_uring_prep_read(sqe, p->fd, p->buf, len, p->off);
	io_uring_sqe_set_data64(sqe, (uint64_t)i);
	r->reads++;
}

int kv_reader_wait(kv_reader *r)
{
	int first_err = 0;
	unsigned left = r->n;
	if (r->broken) {
		r->n = 0;
		return -EIO;
	}
	for (unsigned i = 0; i < r->n; i++)
		prep(r, i);
	while (left > 0) {
		r->rounds++;
		int rc = io_uring_submit_and_wait(&r->ring, 1);
		if (rc < 0 && rc != -EINTR) {
			/* nothing more completes that was not submitted: what was
			 * submitted is reaped below, the rest counts as failed */
			if (!first_err)
				first_err = rc;
			if (io_uring_sq_ready(&r->ring) == left) {
				/* those SQEs point into p[]: never submit them later */
				r->broken = 1;
				break;
			}
		}
		struct io_uring_cqe *cqe;
		unsigned head, seen = 0;
		io_uring_for_each_cqe(&r->ring, head, cqe) {
			unsigned i = (unsigned)io_uring_cqe_get_data64(cqe);
			int res = cqe->res;
			seen++;
			struct kv_pending *p = &r->p[i];
			if (res == -EINTR || res == -EAGAIN) {
				prep(r, i);
				continue;
			}
			if (res <= 0) {
				if (!first_err)
					first_err = res < 0 ? res : -EIO;
				left--;
				continue;
			}
			p->buf += res;
			p->len -= (size_t)res;
			p->off += (uint64_t)res;
			if (p->len > 0)
				prep(r, i); /* the remainder of a short read */
			else
				left--;
		}
		io_uring_cq_advance(&r->ring, seen);
	}
	r->n = 0;
	return first_err;
}

int kv_reader_add(kv_reader *r, int fd, void *buf, size_t len, uint64_t off)
{
	int rc = 0;
	if (len == 0)
		return 0;
	if (r->n == r->depth)
		rc = kv_reader_wait(r);
	r->p[r->n++] = (struct kv_pending){ fd, buf, len, off };
	return rc;
}

uint64_t kv_reader_reads(const kv_reader *r) { return r->reads; }
uint64_t kv_reader_rounds(const kv_reader *r) { return r->rounds; }
