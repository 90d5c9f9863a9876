# convert/pull.mk: owned by its module; appends to the lists in Makefile.am.
# `coli pull`: Hugging Face Hub client (libcurl) and the shard-at-a-time
# download-and-convert driver.
libcoliconvert_a_SOURCES += \
	convert/pull_hub.c convert/pull_hub.h convert/pull_retry.c convert/pull_retry.h convert/pull_names.c \
	convert/pull.c convert/pull.h convert/pull_int.h \
	convert/pull_state.c convert/pull_schedule.c convert/pull_plan.c convert/pull_progress.c \
	convert/pull_punch.c

PULL_TESTS = tests/pull_hub.sh tests/pull_hostile.sh
TESTS += $(PULL_TESTS)
EXTRA_DIST += $(PULL_TESTS) tests/pull_mockhub.py bench/model_sizes.py

man_MANS += man/coli-pull.1
EXTRA_DIST += man/coli-pull.1.in
