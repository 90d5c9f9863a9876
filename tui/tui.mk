# tui/tui.mk: colitop (ncurses chat-and-monitor). Owned by the tui module;
# appends to the lists in Makefile.am.
bin_PROGRAMS += colitop
TUI_CORE = tui/tui_layout.c tui/tui_layout.h tui/tui_text.c tui/tui_text.h \
	tui/tui_edit.c tui/tui_edit.h tui/tui_affinity.c tui/tui_affinity.h \
	tui/tui_log.c tui/tui_log.h tui/tui_atlas.c tui/tui_atlas.h
colitop_SOURCES = tui/colitop_main.c tui/tui_app.c tui/tui_app.h \
	tui/tui_chat.c tui/tui_chat.h tui/tui_sample.c tui/tui_sessions.c \
	tui/tui_draw_chat.c tui/tui_draw_monitor.c tui/tui_draw_stats.c tui/tui_draw_atlas.c \
	tui/tui_draw_misc.c tui/tui_theme.c tui/tui_theme.h \
	tui/tui_signal.c tui/tui_signal.h $(TUI_CORE)
colitop_LDADD = libcoliserver.a libcoliconvert.a libcoli.a $(NCURSESW_LIBS) $(COLI_LIBS)
colitop_CFLAGS = $(AM_CFLAGS) $(NCURSESW_CFLAGS)

# Unit tests of the pure parts (no terminal needed).
check_PROGRAMS += tests/tui_unit
tests_tui_unit_SOURCES = tests/tui_unit.c tui/tui_theme.c tui/tui_chat.c $(TUI_CORE)
tests_tui_unit_LDADD = libcoliserver.a libcoliconvert.a libcoli.a $(NCURSESW_LIBS) $(COLI_LIBS)
tests_tui_unit_CFLAGS = $(AM_CFLAGS) $(NCURSESW_CFLAGS) -I$(top_srcdir)/tui
TESTS += tests/tui_unit
# colitop's views of the recorded routing profiles (tui_atlas.c) on files
check_PROGRAMS += tests/tui_atlas_test
tests_tui_atlas_test_SOURCES = tests/tui_atlas_test.c tests/test_util.h tui/tui_atlas.c tui/tui_atlas.h
tests_tui_atlas_test_LDADD = libcoli.a $(COLI_LIBS)
tests_tui_atlas_test_CFLAGS = $(AM_CFLAGS) -I$(top_srcdir)/tui
TESTS += tests/tui_atlas_test

# End-to-end tests in tmux (skip when tmux is missing).
TESTS += tests/tui_e2e.sh tests/tui_server.sh tests/tui_keys.sh tests/tui_thinking.sh tests/tui_atlas.sh
EXTRA_DIST += tests/tui_e2e.sh tests/tui_server.sh tests/tui_keys.sh tests/tui_thinking.sh tests/tui_common.sh \
	tests/tui_atlas.sh \
	tui/bench_colitop.sh tui/bench_keys.sh

man_MANS += man/colitop.1
EXTRA_DIST += man/colitop.1.in
