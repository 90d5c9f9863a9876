# cli/cli.mk: the `coli` program: the dispatch table (coli_main.c), one
# cmd_*.c per subcommand and the helpers only they use. Only `coli` links
# these; the libraries never refer back into them. The man pages and tests of
# each command stay with its module's fragment.
bin_PROGRAMS += coli
coli_SOURCES = \
	cli/coli_main.c cli/cli.h cli/cli_json.c cli/cli_json.h \
	cli/cli_print.c cli/cli_print.h \
	cli/cli_args.c cli/cli_args.h \
	cli/cli_convert_flags.c cli/cli_convert_flags.h \
	cli/cmd_atlas.c cli/cmd_atlas.h cli/cmd_atlas_out.c \
	cli/cmd_atlas_png.c \
	cli/cmd_atlas_mirror.c cli/cmd_atlas_mirror.h \
	cli/cmd_batch.c \
	cli/cmd_batch_io.c cli/cmd_batch_io.h \
	cli/cmd_bench.c \
	cli/cmd_bench_draft.c cli/cmd_bench_draft.h \
	cli/cmd_chat.c \
	cli/cmd_compare.c \
	cli/cmd_convert.c \
	cli/cmd_doctor.c \
	cli/cmd_generate.c \
	cli/cmd_info.c \
	cli/cmd_iobench.c \
	cli/cmd_logits.c \
	cli/cmd_perplexity.c \
	cli/cmd_pull.c \
	cli/cmd_serve.c \
	cli/cmd_sessions.c \
	cli/cmd_synth.c \
	cli/cmd_tokenize.c \
	cli/cmd_tokenize_chat.c
coli_CFLAGS = $(AM_CFLAGS) $(PNG_CFLAGS)
coli_LDADD = $(COLI_ALL_LDADD) $(PNG_LIBS)

# every command answers --help
TESTS += tests/cli_help.sh tests/cli_generate_output.sh tests/cli_sessions_dash.sh
EXTRA_DIST += tests/cli_help.sh tests/cli_generate_output.sh tests/cli_sessions_dash.sh
# routing profiles and coli atlas on the default model (issue 29)
TESTS += tests/cli_atlas.sh
EXTRA_DIST += tests/cli_atlas.sh tests/cli_atlas_check.py
# coli doctor's checks
TESTS += tests/core_doctor.sh
EXTRA_DIST += tests/core_doctor.sh
