# src/grammar.mk: owned by its module; appends to the lists in Makefile.am.
# Structured output: JSON Schema and regex compiled to a grammar, the token
# mask. (Its tests are in tests/tests.mk.)
libcoli_a_SOURCES += \
	src/grammar.c src/grammar.h src/grammar_impl.h \
	src/grammar_json_schema.c src/grammar_regex.c \
	src/grammar_mask.c src/grammar_mask.h
