# src/tokenizer.mk: owned by its module; appends to the lists in Makefile.am.
libcoli_a_SOURCES += src/tokenizer.h src/tokenizer_impl.h \
	src/tokenizer_map.c src/tokenizer_load.c src/tokenizer_tiktoken.c src/tokenizer_pretok.c \
	src/tokenizer_bpe.c src/tokenizer.c src/tokenizer_decode.c

check_PROGRAMS += tests/tokenizer_test
tests_tokenizer_test_SOURCES = tests/tokenizer_test.c
tests_tokenizer_test_LDADD = libcoli.a $(COLI_LIBS)
TESTS += tests/tokenizer_test tests/tokenizer_conformance.sh tests/tokenizer_chat_cli.sh \
	tests/tokenizer_tiktoken.sh
EXTRA_DIST += tests/tokenizer_tiktoken.sh tests/tiktoken_mk.py tests/node/tiktoken_check.mjs
EXTRA_DIST += tests/tokenizer_conformance.sh tests/tokenizer_chat_cli.sh tests/node/package.json \
	tests/node/package-lock.json tests/node/corpus.mjs tests/node/conformance.mjs \
	tests/node/chat.mjs tests/node/fixtures/glm5_chat_template.jinja \
	bench/tokenizer_bench.sh man/coli-tokenize.1.in man/coli-chat.1.in
man_MANS += man/coli-tokenize.1 man/coli-chat.1
