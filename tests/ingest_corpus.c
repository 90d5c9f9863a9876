/* ingest_corpus.c - runs every seed in tests/fuzz/corpus through the fuzz
 * entry point (tests/fuzz/fuzz_ingest.c), so the corpus and the fuzzer's
 * invariant checks run in `make check` too. Seeds named st-ok-* / st-bad-*
 * must be accepted / refused by st_parse_header, cfg-ok-* / cfg-bad-* by
 * hf_config_from_json. */
#include "config.h"

#include <stdint.h>
#include <string.h>

#include "fuzz_corpus.h"

int fuzz_ingest_run(const uint8_t *data, size_t size, int *st_rc, int *cfg_rc);

static int judge(const char *name, const uint8_t *data, size_t len)
{
	int st_rc, cfg_rc, ok = 1;
	fuzz_ingest_run(data, len, &st_rc, &cfg_rc);
	if (!strncmp(name, "st-ok-", 6))
		ok = st_rc == 0;
	else if (!strncmp(name, "st-bad-", 7))
		ok = st_rc < 0;
	else if (!strncmp(name, "cfg-ok-", 7))
		ok = cfg_rc == 0;
	else if (!strncmp(name, "cfg-bad-", 8))
		ok = cfg_rc < 0;
	if (!ok)
		fprintf(stderr, "%s: st %d, config %d\n", name, st_rc, cfg_rc);
	return ok;
}

int main(void)
{
	return fuzz_corpus_run("corpus", judge);
}
