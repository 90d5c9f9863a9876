# convert/convert.mk: owned by its module; appends to the lists in Makefile.am.
# `coli convert` and `coli info` (the container reader is in model.mk).
libcoliconvert_a_SOURCES += \
	convert/convert.c convert/convert_plan.c convert/convert_write.c convert/convert_manifest.c convert/convert_fp8.c \
	convert/convert.h

check_PROGRAMS += tests/convert_check tests/convert_manifest
tests_convert_check_SOURCES = tests/convert_check.c
tests_convert_check_LDADD = $(COLI_CONVERT_LDADD)
tests_convert_manifest_SOURCES = tests/convert_manifest.c
tests_convert_manifest_LDADD = $(COLI_CONVERT_LDADD)
CONVERT_TESTS = tests/convert_roundtrip.sh tests/convert_resume.sh tests/convert_badinput.sh \
	tests/convert_delete_source.sh tests/convert_space.sh tests/convert_fp8_scales.sh \
	tests/convert_indexer_quant.sh
TESTS += tests/convert_manifest $(CONVERT_TESTS)
EXTRA_DIST += $(CONVERT_TESTS) tests/convert_mkckpt.py tests/convert_fp8_variants.py

man_MANS += man/coli-convert.1 man/coli-info.1 man/colitop-model.5
EXTRA_DIST += man/coli-convert.1.in man/coli-info.1.in man/colitop-model.5.in
