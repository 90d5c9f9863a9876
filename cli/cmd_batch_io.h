/* cmd_batch_io.h - the OpenAI Batch API line formats for `coli batch` (pure:
 * no engine, no threads).
 *
 * Input, one JSON object per line:
 *   {"custom_id": "...", "method": "POST", "url": "/v1/chat/completions",
 *    "body": {...}}
 * Output, one JSON object per finished request, appended:
 *   {"id": "batch_req_...", "custom_id": "...",
 *    "response": {"status_code": 200, "request_id": "...", "body": {...}},
 *    "error": null}
 * or, when the line could not be sent at all (bad method or url):
 *   {"id": ..., "custom_id": ..., "response": null,
 *    "error": {"code": "...", "message": "..."}}
 *
 * The output file is the resume log: a custom_id present in it is answered.
 * Only the last line may be torn (a kill during the write); it is cut off.
 * A bad line anywhere else means the file is not ours, and we refuse. */
#ifndef COLI_BATCH_IO_H
#define COLI_BATCH_IO_H

#include <stddef.h>

#include "coli_err.h"

typedef struct batch_item {
	char *custom_id;
	char *url;                 /* NULL when the line's url/method was refused */
	char *body;                /* compact JSON text of "body" */
	char *err_code, *err_msg;  /* set when the line cannot be sent */
	int line;                  /* 1-based line number in IN */
	long cost;                 /* admission order estimate (larger first) */
	int done;                  /* already answered in OUT */
} batch_item;

typedef struct batch_input {
	batch_item *items;
	int n;
} batch_input;

/* Read IN whole. A line that is not a JSON object, or lacks a string
 * custom_id, or repeats one, refuses the file (err names IN:LINE): the
 * results could not be matched to their requests. Bad method/url only
 * marks the item (answered with an error line). Empty lines are skipped.
 * label_field (--label-field, or NULL): the string at that dotted path
 * of the line ("label", "body.metadata.lang") becomes the body's
 * metadata.label, the request's routing profile label; a value that is
 * not a string marks the item. */
int batch_input_read(const char *path, const char *label_field, batch_input *out, coli_err *err);
void batch_input_free(batch_input *in);

/* Scan OUT (absent = nothing done): mark the items whose custom_id it
 * holds, cut a torn last line (truncating the file), count the answered
 * lines in *n_done. A custom_id in OUT that is not in IN is ignored. */
int batch_output_scan(const char *path, batch_input *in, int *n_done, int *n_truncated_bytes,
		      coli_err *err);

/* Open OUT for appending (created if absent) and take an exclusive flock
 * on it, held until the fd is closed: two runs on one output would both
 * answer every request. A second run fails at once with err naming the
 * holder's pid (from /proc/locks) where it can be found. Returns the fd or
 * a negative errno. */
int batch_output_open_locked(const char *path, coli_err *err);

/* One output line (with its '\n'), malloc'd. body_json is the server's
 * answer (parsed and embedded; kept as a string if it is not JSON), or
 * NULL with err_code/err_msg for a request that was never sent. */
char *batch_output_line(const char *custom_id, int status, const char *body_json,
			const char *err_code, const char *err_msg);

/* Admission order: indexes of the items not done, largest cost first (so
 * the long requests do not run alone at the end), input order on ties. */
int *batch_order(const batch_input *in, int *n_pending);

#endif
