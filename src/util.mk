# src/util.mk: owned by its module; appends to the lists in Makefile.am.
# The base every module uses: errors, logging, number and size parsing,
# the log file ring and its writer thread, Unicode, CRC-32C, SHA-256,
# the seqlock, the monotonic clock, atomic file replacement, the growable
# byte string, growing an array by doubling.
libcoli_a_SOURCES += \
	src/util_err.c src/coli_err.h \
	src/util_log.c src/coli_log.h \
	src/util_log_ring.c src/util_log_ring.h \
	src/util_args.c src/util_args.h \
	src/util_size_parse.c src/util_size_parse.h \
	src/util_unicode.c src/util_unicode.h \
	src/util_crc32c.c src/util_crc32c.h \
	src/util_sha256.c src/util_sha256.h \
	src/util_seqlock.h src/util_time.h src/util_bits.h \
	src/util_file.c src/util_file.h \
	src/util_buf.c src/util_buf.h \
	src/util_array.c src/util_array.h

# the seqlock under one writer and two readers (threaded: also in the TSan stage)
check_PROGRAMS += tests/util_seqlock
TESTS += tests/util_seqlock
tests_util_seqlock_SOURCES = tests/util_seqlock.c tests/test_util.h
tests_util_seqlock_LDADD = libcoli.a $(COLI_LIBS)

# atomic file replacement, and no temporary file left on error
check_PROGRAMS += tests/util_file
TESTS += tests/util_file
tests_util_file_SOURCES = tests/util_file.c tests/test_util.h
tests_util_file_LDADD = libcoli.a $(COLI_LIBS)

# the growable byte string: appends, consume, steal, the sticky -ENOMEM
check_PROGRAMS += tests/util_buf
TESTS += tests/util_buf
tests_util_buf_SOURCES = tests/util_buf.c tests/test_util.h
tests_util_buf_LDADD = libcoli.a $(COLI_LIBS)

# growing an array by doubling: the capacities, the contents kept, and
# -ENOMEM with the old block kept on overflow and on a failed allocation
check_PROGRAMS += tests/util_array
TESTS += tests/util_array
tests_util_array_SOURCES = tests/util_array.c tests/test_util.h
tests_util_array_LDADD = libcoli.a $(COLI_LIBS)

# the log ring: appends never wait for a blocked writer, drops are counted
# and said, every kept line arrives in order, a clean stop drains it
# (threaded: also in the TSan stage)
check_PROGRAMS += tests/util_log_ring
TESTS += tests/util_log_ring
tests_util_log_ring_SOURCES = tests/util_log_ring.c tests/test_util.h
tests_util_log_ring_LDADD = libcoli.a $(COLI_LIBS)
