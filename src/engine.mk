# src/engine.mk: owned by its module; appends to the lists in Makefile.am.
# The engine thread: requests, slots, sessions, batching, speculative
# decoding, stop strings, engine flags shared by coli and colitop.
libcoli_a_SOURCES += \
	src/engine.c src/engine.h \
	src/engine_request.c src/engine_request.h \
	src/engine_flags.c src/engine_flags.h \
	src/engine_session.c src/engine_slot.c src/engine_grammar.c src/engine_internal.h \
	src/engine_draft.c src/engine_draft.h src/engine_draft_mode.c src/engine_draft_auto.c src/engine_draft_auto.h \
	src/engine_stop_match.c src/engine_stop_match.h

EXTRA_DIST += bench/draft.sh bench/prefill_chunk.sh
