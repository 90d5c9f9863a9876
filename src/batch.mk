# src/batch.mk: owned by its module; appends to the lists in Makefile.am.
# `coli batch` (Batch API lines through the server's own request code,
# in-process; the command and its I/O are in cli/).

TESTS += tests/batch_run.sh tests/batch_guard.sh
EXTRA_DIST += tests/batch_run.sh tests/batch_mkinput.py tests/batch_guard.sh

man_MANS += man/coli-batch.1
EXTRA_DIST += man/coli-batch.1.in

# Benchmark (not in the suite): tok/s and disk bytes per token vs --parallel.
EXTRA_DIST += bench/batch_parallel.sh
