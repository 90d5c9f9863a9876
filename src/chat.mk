# src/chat.mk: owned by its module; appends to the lists in Makefile.am.
# Chat templates (Jinja subset), the reasoning splitter and chat transcripts
# (kept for coli chat and colitop).
libcoli_a_SOURCES += \
	src/chat_template.c src/chat_template_detect.c src/chat_template.h \
	src/chat_transcript.c src/chat_transcript.h \
	src/chat_think.c src/chat_think.h src/chat_reasoning.c
# The Jinja interpreter that renders a checkpoint's own template.
libcoli_a_SOURCES += \
	src/chat_jinja.h src/chat_jinja_parser.h src/chat_jinja_lex.c src/chat_jinja_parse.c \
	src/chat_jinja_stmt.c src/chat_jinja_eval.c src/chat_jinja_ops.c src/chat_jinja_value.c \
	src/chat_jinja_filter.c src/chat_jinja_method.c
libcoli_a_SOURCES += src/chat_template_jinja.c

check_PROGRAMS += tests/chat_jinja_test tests/chat_jinja_render
tests_chat_jinja_test_SOURCES = tests/chat_jinja_test.c
tests_chat_jinja_test_LDADD = libcoli.a $(COLI_LIBS)
tests_chat_jinja_render_SOURCES = tests/chat_jinja_render.c
tests_chat_jinja_render_LDADD = libcoli.a $(COLI_LIBS)
TESTS += tests/chat_jinja_test tests/chat_template_conformance.sh tests/chat_template_server.sh
EXTRA_DIST += tests/chat_template_conformance.sh tests/chat_template_ref.py tests/chat_template_server.sh \
	tests/chat_jinja_diff.py tests/templates/expressions.txt \
	tests/templates/README.md tests/templates/conversations.json \
	tests/templates/deepseek-ai-DeepSeek-V3.1.jinja tests/templates/DeepSeek-V3.2.jinja \
	tests/templates/moonshotai-Kimi-K2.jinja tests/templates/moonshotai-Kimi-K2-Thinking.jinja \
	tests/templates/glm_4_5.jinja tests/templates/GLM-4.6.jinja tests/templates/GLM-5.jinja
