/* ingest_corpus.c - runs every seed in tests/fuzz/corpus through the fuzz
 * entry point (tests/fuzz/fuzz_ingest.c), so the corpus and the fuzzer's
 * invariant checks run in `make check` too. Seeds named st-ok-* / st-bad-*
 * must be accepted / refused by st_parse_header, cfg-ok-* / cfg-bad-* by
 * hf_config_from_json. */
#include "config.h"

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int fuzz_ingest_run(const uint8_t *data, size_t size, int *st_rc, int *cfg_rc);

static int run_one(const char *dir, const char *name)
{
	char path[1400];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "rb");
	if (!f) {
		perror(path);
		return 1;
	}
	uint8_t *buf = NULL;
	size_t len = 0, cap = 0, n;
	do {
		if (len == cap)
			buf = realloc(buf, cap = cap * 2 + 4096);
		n = fread(buf + len, 1, cap - len, f);
		len += n;
	} while (n > 0);
	fclose(f);
	int st_rc, cfg_rc, bad = 0;
	fuzz_ingest_run(buf, len, &st_rc, &cfg_rc);
	free(buf);
	if (!strncmp(name, "st-ok-", 6))
		bad = st_rc != 0;
	else if (!strncmp(name, "st-bad-", 7))
		bad = st_rc >= 0;
	else if (!strncmp(name, "cfg-ok-", 7))
		bad = cfg_rc != 0;
	else if (!strncmp(name, "cfg-bad-", 8))
		bad = cfg_rc >= 0;
	if (bad)
		fprintf(stderr, "%s: unexpected result (st %d, config %d)\n", name, st_rc, cfg_rc);
	return bad;
}

int main(void)
{
	const char *top = getenv("top_srcdir");
	char dir[1024];
	snprintf(dir, sizeof dir, "%s/tests/fuzz/corpus", top && top[0] ? top : COLI_SRCDIR);
	DIR *d = opendir(dir);
	if (!d) {
		perror(dir);
		return 1;
	}
	int failures = 0, count = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		failures += run_one(dir, de->d_name);
		count++;
	}
	closedir(d);
	printf("%d corpus files, %d failures\n", count, failures);
	return failures || count == 0 ? 1 : 0;
}
