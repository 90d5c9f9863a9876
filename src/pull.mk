# src/pull.mk: owned by its module; appends to the lists in Makefile.am.
# `coli pull`: Hugging Face Hub client (libcurl) and the shard-at-a-time
# download-and-convert driver.
libcoli_a_SOURCES += \
	src/pull_hub.c src/pull_hub.h src/pull_retry.c src/pull_retry.h src/pull_names.c src/pull.c src/pull.h

PULL_TESTS = tests/pull_hub.sh tests/pull_hostile.sh
TESTS += $(PULL_TESTS)
EXTRA_DIST += $(PULL_TESTS) tests/pull_mockhub.py bench/model_sizes.py

man_MANS += man/coli-pull.1
EXTRA_DIST += man/coli-pull.1.in
