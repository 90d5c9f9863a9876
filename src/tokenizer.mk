# src/tokenizer.mk: owned by its module; appends to the lists in Makefile.am.
libcoli_a_SOURCES += src/unicode.c src/unicode.h src/tokenizer_impl.h \
	src/tokenizer_map.c src/tokenizer_load.c src/tokenizer_pretok.c \
	src/tokenizer_bpe.c src/tokenizer.c src/tokenizer_decode.c \
	src/chat_template.c src/cmd_tokenize.c src/cmd_tokenize_chat.c
