# src/sampler.mk: owned by its module; appends to the lists in Makefile.am.
# Token sampling and log-probabilities.
libcoli_a_SOURCES += src/sampler.c src/sampler.h src/sampler_logprob.c
