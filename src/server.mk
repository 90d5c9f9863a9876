# src/server.mk: owned by its module; appends to the lists in Makefile.am.
# The HTTP server (OpenAI/Anthropic-compatible endpoint) and `coli serve`.
libcoli_a_SOURCES += \
	src/server.h src/server_internal.h \
	src/server_util.c src/server_parse.c src/server_anthropic.c \
	src/server_openai.c src/server_stop.c src/server_gen.c \
	src/server_metrics.c src/server_handlers.c src/server_http.c \
	src/cmd_serve.c

# Unit tests of the pure parts (parsing, formatting, stop strings, tools).
check_PROGRAMS += tests/server_test_parse tests/server_test_format
TESTS += tests/server_test_parse tests/server_test_format
tests_server_test_parse_SOURCES = tests/server_test_parse.c
tests_server_test_parse_LDADD = libcoli.a $(COLI_LIBS)
tests_server_test_format_SOURCES = tests/server_test_format.c
tests_server_test_format_LDADD = libcoli.a $(COLI_LIBS)

man_MANS += man/coli-serve.1
EXTRA_DIST += man/coli-serve.1.in
