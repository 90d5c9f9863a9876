/* server_fuzz_corpus.c - runs every seed in tests/fuzz/corpus-request
 * through the request fuzzer's entry point (tests/fuzz/fuzz_request.c), so
 * the seeds and the fuzzer's invariant checks run in `make check` too.
 * Seeds named req-ok-* must be accepted by their parser, req-bad-* refused. */
#include "config.h"

#include <stdint.h>
#include <string.h>

#include "fuzz_corpus.h"

int fuzz_request_run(const uint8_t *data, size_t size, int *parse_rc);

static int judge(const char *name, const uint8_t *data, size_t len)
{
	int rc, ok = 1;
	fuzz_request_run(data, len, &rc);
	if (!strncmp(name, "req-ok-", 7))
		ok = rc == 0;
	else if (!strncmp(name, "req-bad-", 8))
		ok = rc != 0;
	if (!ok)
		fprintf(stderr, "%s: parse %d\n", name, rc);
	return ok;
}

int main(void)
{
	return fuzz_corpus_run("corpus-request", judge);
}
