# The embedded default model (data/default-model, trained by tools/train)
# and `coli perplexity`, the engine-side quality check of a model.
libcoli_a_SOURCES += src/cmd_perplexity.c

man_MANS += man/coli-perplexity.1
EXTRA_DIST += man/coli-perplexity.1.in

EXTRA_DIST += tools/train/README.md tools/train/corpus.py tools/train/bpe.py \
	tools/train/model.py tools/train/train.py tools/train/chat_template.jinja
