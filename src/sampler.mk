# src/sampler.mk: owned by its module; appends to the lists in Makefile.am.
# Token sampling and log-probabilities.
libcoli_a_SOURCES += src/sampler.c src/sampler.h src/sampler_logprob.c

check_PROGRAMS += tests/core_sampler_test
TESTS += tests/core_sampler_test
tests_core_sampler_test_SOURCES = tests/core_sampler_test.c
tests_core_sampler_test_LDADD = libcoli.a $(COLI_LIBS)
