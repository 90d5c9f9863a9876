/* fuzz_ingest.c - libFuzzer target for the checkpoint ingestion parsers.
 *
 * Input: SAFETENSORS_BYTES [0xFF CONFIG_JSON]. The bytes before the first
 * 0xFF are a safetensors file prefix (u64 header length + JSON header +
 * data) whose size is the file size; the bytes after it are fed to
 * hf_config_from_json. Beyond "no crash, no leak, no UB" the target checks
 * invariants of what the parsers accept, and aborts if one breaks:
 * tensors lie inside the file, sizes match shapes, and an accepted config
 * survives hf_config_to_json -> hf_config_from_json unchanged.
 *
 * Built by tests/fuzz/run-fuzz.sh with clang -fsanitize=fuzzer; the same
 * file is linked into tests/ingest_corpus so the seed corpus runs in
 * `make check`. */
#include "config.h"

#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "coli_log.h"
#include "model_hf_config.h"
#include "ingest_safetensors.h"

int fuzz_ingest_run(const uint8_t *data, size_t size, int *st_rc, int *cfg_rc);

static void check_tensors(const st_tensor *ts, int n, uint64_t file_size)
{
	for (int i = 0; i < n; i++) {
		const st_tensor *t = &ts[i];
		if (t->offset > file_size || t->nbytes > file_size - t->offset)
			abort();
		if ((uint64_t)st_numel(t) * st_dtype_size(t->dtype) != t->nbytes)
			abort();
		if (!t->name || !t->name[0])
			abort();
	}
}

static void check_config_roundtrip(const coli_config *c)
{
	coli_config back;
	coli_err err = { 0 };
	json_t *j = hf_config_to_json(c);
	if (!j)
		abort();
	if (hf_config_from_json(j, &back, &err) || memcmp(c, &back, sizeof back))
		abort();
	json_decref(j);
}

int fuzz_ingest_run(const uint8_t *data, size_t size, int *st_rc, int *cfg_rc)
{
	static int quiet;
	if (!quiet) {
		coli_log_set_level(COLI_LOG_ERROR);  /* accepted GLM configs warn */
		quiet = 1;
	}
	const uint8_t *sep = memchr(data, 0xff, size);
	size_t st_len = sep ? (size_t)(sep - data) : size;

	st_tensor *ts = NULL;
	int n = 0;
	coli_err err = { 0 };
	*st_rc = st_parse_header(data, st_len, st_len, 0, "fuzz", &ts, &n, &err);
	if (*st_rc == 0)
		check_tensors(ts, n, st_len);
	else if (!err.msg[0] || n != 0)
		abort();  /* every refusal explains itself and appends nothing */
	for (int i = 0; i < n; i++)
		free(ts[i].name);
	free(ts);

	*cfg_rc = 1;  /* no config part */
	if (sep) {
		json_t *root = json_loadb((const char *)sep + 1, size - st_len - 1, JSON_DECODE_ANY, NULL);
		if (root) {
			coli_config c;
			coli_err_clear(&err);
			*cfg_rc = hf_config_from_json(root, &c, &err);
			if (*cfg_rc == 0)
				check_config_roundtrip(&c);
			else if (!err.msg[0])
				abort();
			json_decref(root);
		}
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int a, b;
	return fuzz_ingest_run(data, size, &a, &b);
}
