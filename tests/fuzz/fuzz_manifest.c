/* fuzz_manifest.c - libFuzzer target for the container reader
 * (coli_container_open: manifest.json, its config, the tensor and expert
 * indexes, file sizes, the scale check of loaded tensors) and the tensor
 * binding doctor and open share (coli_model_check).
 *
 * Input: the bytes of manifest.json. Before opening, the harness creates
 * every file the input's "files" array names with a safe path and a size
 * up to 2 MiB (zero bytes, so scales pass), so the fuzzer explores offsets,
 * shapes and record layouts rather than stopping at "no such file".
 * Invariants beyond "no crash, no leak, no UB": a refusal explains itself;
 * an accepted container's tensors lie inside their files, have the bytes
 * their type and shape imply, and are found by name.
 *
 * Built by tests/fuzz/run-fuzz.sh; linked into tests/fuzz_manifest_corpus
 * so the seeds in tests/fuzz/corpus-manifest run in `make check`. */
#include "config.h"

#include <fcntl.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "coli_log.h"
#include "model_container.h"
#include "fuzz_util.h"
#include "model_manifest.h"
#include "model.h"

static void make_files(const char *dir, const uint8_t *data, size_t size)
{
	json_t *root = json_loadb((const char *)data, size, 0, NULL);
	json_t *f;
	size_t i;
	json_array_foreach(json_object_get(root, "files"), i, f) {
		const char *rel = json_string_value(json_object_get(f, "path"));
		json_int_t sz = json_integer_value(json_object_get(f, "size"));
		if (i >= 64 || !rel || !manifest_path_safe(rel) || sz < 0 || sz > (2 << 20) ||
		    strlen(rel) > 200)
			continue;
		char path[512];
		snprintf(path, sizeof path, "%s/%s", dir, rel);
		fuzz_mkparents(path);
		int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (fd >= 0) {
			if (ftruncate(fd, (off_t)sz) != 0)
				abort();
			close(fd);
		}
	}
	json_decref(root);
}

/* 1 when the last input was accepted by coli_container_open (read by
 * tests/fuzz_corpus.c for ok-* / bad-* seeds) */
int fuzz_accepted;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char dir[64];
	fuzz_quiet();
	if (fuzz_tmpdir(dir, sizeof dir))
		abort();
	make_files(dir, data, size);
	char mpath[128];
	snprintf(mpath, sizeof mpath, "%s/manifest.json", dir);
	fuzz_write(mpath, data, size);

	coli_container *c = NULL;
	coli_err err = { 0 };
	coli_container_opts o = { .load_mtp = 1 };
	fuzz_accepted = coli_container_open(dir, &o, &c, &err) == 0;
	if (!fuzz_accepted) {
		if (!err.msg[0] || c)
			abort();
	} else {
		for (int i = 0; i < c->n_tensors; i++) {
			const coli_container_tensor *t = &c->tensors[i];
			if (t->nbytes != coli_qtype_bytes(t->qtype, t->rows, t->cols) || !t->data ||
			    coli_container_find(c, t->name) != t)
				abort();
		}
		coli_err_clear(&err);
		if (coli_model_check(c, 1, &err) < 0 && !err.msg[0])
			abort();
		coli_container_free(c);
	}
	fuzz_rmtree(dir);
	return 0;
}
