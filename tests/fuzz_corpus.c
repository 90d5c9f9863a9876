/* fuzz_corpus.c - runs every seed of one fuzz target's corpus
 * (tests/fuzz/FUZZ_CORPUS/) through its entry point, so the seeds and the
 * target's invariant checks (it aborts when one breaks) run in `make
 * check`, under the sanitizers in the sanitizer build. Seeds named ok-*
 * must be accepted and bad-* refused by the parser under test (the
 * target sets fuzz_accepted). Linked with one tests/fuzz/fuzz_*.c. */
#include "config.h"

#include <stdint.h>
#include <string.h>

#include "fuzz_corpus.h"

#ifndef FUZZ_CORPUS
#error "FUZZ_CORPUS (the corpus directory name) must be defined"
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
extern int fuzz_accepted;

static int judge(const char *name, const uint8_t *data, size_t len)
{
	fuzz_accepted = -1;
	LLVMFuzzerTestOneInput(data, len);
	int want = !strncmp(name, "ok-", 3) ? 1 : !strncmp(name, "bad-", 4) ? 0 : fuzz_accepted;
	if (fuzz_accepted != want)
		fprintf(stderr, "%s: %s, want %s\n", name, fuzz_accepted == 1 ? "accepted" : "refused",
			want ? "accepted" : "refused");
	return fuzz_accepted == want;
}

int main(void)
{
	return fuzz_corpus_run(FUZZ_CORPUS, judge);
}
