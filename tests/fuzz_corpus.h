/* fuzz_corpus.h - the seed-corpus walker the corpus tests share: every file
 * of tests/fuzz/CORPUS/ (dot files aside) is read whole and handed to the
 * caller's judge, which runs it through a fuzz target's entry point (the
 * target aborts when one of its invariants breaks) and says whether the
 * parser's verdict is the one the seed's name asks for. Header-only, with
 * test_util.h's reporting: a wrong verdict is one failed check, and an
 * empty or missing corpus fails too (a walker that saw nothing proved
 * nothing). */
#ifndef COLI_FUZZ_CORPUS_H
#define COLI_FUZZ_CORPUS_H

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "test_util.h"

/* Returns 1 when the verdict on seed NAME is right; may print why not. */
typedef int (*fuzz_corpus_judge)(const char *name, const uint8_t *data, size_t len);

static uint8_t *fuzz_corpus_slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	uint8_t *buf = NULL;
	size_t cap = 0, n;
	*len = 0;
	do {
		if (*len == cap) {
			uint8_t *p = realloc(buf, cap = cap * 2 + 4096);
			if (!p) {
				free(buf);
				fclose(f);
				return NULL;
			}
			buf = p;
		}
		n = fread(buf + *len, 1, cap - *len, f);
		*len += n;
	} while (n > 0);
	fclose(f);
	return buf;
}

/* Runs every seed of tests/fuzz/CORPUS through JUDGE; main's exit status. */
static int fuzz_corpus_run(const char *corpus, fuzz_corpus_judge judge)
{
	const char *top = getenv("top_srcdir");
	char dir[1024];
	snprintf(dir, sizeof dir, "%s/tests/fuzz/%s", top && top[0] ? top : COLI_SRCDIR, corpus);
	DIR *d = opendir(dir);
	REQUIRE(d, "%s: cannot open the corpus", dir);
	int seeds = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		char path[1400];
		size_t len;
		snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
		uint8_t *buf = fuzz_corpus_slurp(path, &len);
		CHECK(buf, "%s: unreadable", path);
		if (buf)
			CHECK(judge(de->d_name, buf, len), "%s/%s: wrong verdict", corpus, de->d_name);
		free(buf);
		seeds++;
	}
	closedir(d);
	CHECK(seeds > 0, "%s: no seeds", dir);
	printf("%s: %d seeds\n", corpus, seeds);
	return test_summary(corpus);
}

#endif
