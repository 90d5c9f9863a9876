/* fuzz_corpus.c - runs every seed of one fuzz target's corpus
 * (tests/fuzz/FUZZ_CORPUS/) through its entry point, so the seeds and the
 * target's invariant checks (it aborts when one breaks) run in `make
 * check`, under the sanitizers in the sanitizer build. Seeds named ok-*
 * must be accepted and bad-* refused by the parser under test (the
 * target sets fuzz_accepted). Linked with one tests/fuzz/fuzz_*.c. */
#include "config.h"

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef FUZZ_CORPUS
#error "FUZZ_CORPUS (the corpus directory name) must be defined"
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
extern int fuzz_accepted;

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
		if (len == cap) {
			uint8_t *p = realloc(buf, cap = cap * 2 + 4096);
			if (!p) {
				free(buf);
				fclose(f);
				return 1;
			}
			buf = p;
		}
		n = fread(buf + len, 1, cap - len, f);
		len += n;
	} while (n > 0);
	fclose(f);
	fuzz_accepted = -1;
	LLVMFuzzerTestOneInput(buf, len);
	free(buf);
	int bad = (!strncmp(name, "ok-", 3) && fuzz_accepted != 1) ||
		  (!strncmp(name, "bad-", 4) && fuzz_accepted != 0);
	if (bad)
		fprintf(stderr, "%s/%s: %s, want %s\n", FUZZ_CORPUS, name,
			fuzz_accepted ? "accepted" : "refused", name[0] == 'o' ? "accepted" : "refused");
	return bad;
}

int main(void)
{
	const char *top = getenv("top_srcdir");
	char dir[1024];
	snprintf(dir, sizeof dir, "%s/tests/fuzz/%s", top && top[0] ? top : COLI_SRCDIR, FUZZ_CORPUS);
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
	printf("%s: %d seeds, %d failures\n", FUZZ_CORPUS, count, failures);
	return failures || count == 0 ? 1 : 0;
}
