# convert/synth.mk: owned by its module; appends to the lists in Makefile.am.
# `coli synth` (random models of the real architecture in Hugging Face
# layout; the safetensors writer is ingest's) and the reference forward-pass tests.
libcoliconvert_a_SOURCES += \
	convert/synth.c convert/synth.h convert/synth_impl.h \
	convert/synth_weights.c convert/synth_tokenizer.c

check_PROGRAMS += tests/synth_writer
tests_synth_writer_SOURCES = tests/synth_writer.c
tests_synth_writer_LDADD = $(COLI_CONVERT_LDADD)

TESTS += tests/synth_writer tests/synth_cli.sh tests/synth_files.sh tests/synth_tokenizer.sh tests/ref_self.sh tests/ref_forward.sh
EXTRA_DIST += tests/synth_cli.sh tests/synth_files.sh tests/synth_tokenizer.sh tests/ref_self.sh tests/ref_forward.sh \
	tests/ref/ref_model.py tests/ref/ref_logits.py tests/ref/compare.py \
	tests/ref/st_check.py tests/ref/ref_selftest.py tests/ref/README.md \
	tests/ref/container_weights.py tests/ref/greedy.py

man_MANS += man/coli-synth.1
EXTRA_DIST += man/coli-synth.1.in
CLEANFILES += man/coli-synth.1
man/coli-synth.1: $(srcdir)/man/coli-synth.1.in
	$(AM_V_GEN)mkdir -p man && $(man_subst) $(srcdir)/man/coli-synth.1.in > $@
