/* server_fuzz_corpus.c - runs every seed in tests/fuzz/corpus-request
 * through the request fuzzer's entry point (tests/fuzz/fuzz_request.c), so
 * the seeds and the fuzzer's invariant checks run in `make check` too.
 * Seeds named req-ok-* must be accepted by their parser, req-bad-* refused. */
#include "config.h"

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int fuzz_request_run(const uint8_t *data, size_t size, int *parse_rc);

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
			uint8_t *nb = realloc(buf, cap = cap * 2 + 4096);
			if (!nb) {
				free(buf);
				fclose(f);
				return 1;
			}
			buf = nb;
		}
		n = fread(buf + len, 1, cap - len, f);
		len += n;
	} while (n > 0);
	fclose(f);
	int rc, bad = 0;
	fuzz_request_run(buf, len, &rc);
	free(buf);
	if (!strncmp(name, "req-ok-", 7))
		bad = rc != 0;
	else if (!strncmp(name, "req-bad-", 8))
		bad = rc == 0;
	if (bad)
		fprintf(stderr, "%s: unexpected result (parse %d)\n", name, rc);
	return bad;
}

int main(void)
{
	const char *top = getenv("top_srcdir");
	char dir[1024];
	snprintf(dir, sizeof dir, "%s/tests/fuzz/corpus-request", top && top[0] ? top : COLI_SRCDIR);
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
