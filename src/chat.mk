# src/chat.mk: owned by its module; appends to the lists in Makefile.am.
# Chat templates (Jinja subset), the reasoning splitter and chat transcripts
# (kept for coli chat and colitop).
libcoli_a_SOURCES += \
	src/chat_template.c src/chat_template.h \
	src/chat_transcript.c src/chat_transcript.h \
	src/chat_think.c src/chat_think.h
