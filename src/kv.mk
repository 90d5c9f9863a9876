# src/kv.mk: owned by its module; appends to the lists in Makefile.am.
# KV sessions on disk: CRC32C, the .kv format, the session store, the cache
# directory rule and `coli sessions`.
libcoli_a_SOURCES += \
	src/crc32c.c src/crc32c.h \
	src/kv_file.c src/kv_file.h \
	src/kv_store.c src/kv_store.h \
	src/cache_dir.c src/cache_dir.h \
	src/cmd_sessions.c

KV_TESTS = tests/kv_crc32c tests/kv_file tests/kv_store
check_PROGRAMS += $(KV_TESTS) tests/kv_writer
TESTS += $(KV_TESTS) tests/kv_crash.sh tests/kv_sessions.sh
EXTRA_DIST += tests/kv_crash.sh tests/kv_sessions.sh tests/kv_test.h

tests_kv_crc32c_SOURCES = tests/kv_crc32c.c
tests_kv_crc32c_LDADD = libcoli.a $(COLI_LIBS)
tests_kv_file_SOURCES = tests/kv_file.c tests/kv_test.h
tests_kv_file_LDADD = libcoli.a $(COLI_LIBS)
tests_kv_store_SOURCES = tests/kv_store.c tests/kv_test.h
tests_kv_store_LDADD = libcoli.a $(COLI_LIBS)
tests_kv_writer_SOURCES = tests/kv_writer.c tests/kv_test.h
tests_kv_writer_LDADD = libcoli.a $(COLI_LIBS)
