# src/synth.mk: owned by its module; appends to the lists in Makefile.am.
# `coli synth` (random models of the real architecture in Hugging Face
# layout), the safetensors writer, and the reference forward-pass tests.
libcoli_a_SOURCES += \
	src/safetensors_write.c src/safetensors_write.h \
	src/synth.c src/synth.h src/synth_impl.h \
	src/synth_weights.c src/synth_tokenizer.c

check_PROGRAMS += tests/synth_writer
tests_synth_writer_SOURCES = tests/synth_writer.c
tests_synth_writer_LDADD = libcoli.a $(COLI_LIBS)

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
