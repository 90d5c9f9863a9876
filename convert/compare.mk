# convert/compare.mk: owned by its module; appends to the lists in Makefile.am.
# `coli compare`: local vs remote endpoint, streamed with libcurl.
libcoliconvert_a_SOURCES += convert/compare.h convert/compare_prompts.c convert/compare_client.c \
	convert/compare_metrics.c convert/compare_json.c convert/compare_format.c

# Pure parts: JSON extraction and diff, SSE decoding, metrics parsing,
# prompts, the output formats.
check_PROGRAMS += tests/compare_test
TESTS += tests/compare_test
tests_compare_test_SOURCES = tests/compare_test.c
tests_compare_test_LDADD = $(COLI_CONVERT_LDADD)

# End to end: two coli serve (one with a key as the "remote") and a mock
# endpoint that injects latency, 401, 404, malformed SSE and a cut stream.
TESTS += tests/compare_run.sh
EXTRA_DIST += tests/compare_run.sh tests/compare_mock.py

man_MANS += man/coli-compare.1
EXTRA_DIST += man/coli-compare.1.in
