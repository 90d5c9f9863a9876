# src/batch.mk: owned by its module; appends to the lists in Makefile.am.
# `coli batch` (Batch API lines through the server's own request code,
# in-process; the command and its I/O are in cli/).

TESTS += tests/batch_run.sh tests/batch_identity.sh
EXTRA_DIST += tests/batch_run.sh tests/batch_identity.sh tests/batch_mkinput.py

man_MANS += man/coli-batch.1
EXTRA_DIST += man/coli-batch.1.in

# Benchmarks (not in the suite): tok/s and disk bytes per token vs
# --parallel, the extraction workload, the GLM-5.2 projection.
EXTRA_DIST += bench/batch_parallel.sh bench/batch_extract.sh bench/batch_projection.py
