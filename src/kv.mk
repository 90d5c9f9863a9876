# src/kv.mk: owned by its module; appends to the lists in Makefile.am.
