# Core engine library and the `coli` command.
noinst_LIBRARIES += libcoli.a
libcoli_a_SOURCES = \
	src/coli_err.c src/coli_err.h \
	src/coli_log.c src/coli_log.h \
	src/model_config.h \
	src/cli.h

bin_PROGRAMS += coli
coli_SOURCES = src/coli_main.c
coli_LDADD = libcoli.a $(COLI_LIBS)
