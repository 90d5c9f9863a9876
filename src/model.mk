# src/model.mk: owned by its module; appends to the lists in Makefile.am.
# The model: its configuration, the container reader (manifest, weight
# memory), binding tensors for the forward pass, finding the model directory,
# the config.json parser (one parser for checkpoints and manifests) and its
# inverse.
libcoli_a_SOURCES += \
	src/model_config.h src/model.c src/model_bind.c src/model.h \
	src/model_dir.c src/model_dir.h \
	src/model_container.c src/model_container.h \
	src/model_weight_mem.c src/model_weight_mem.h \
	src/model_manifest.c src/model_manifest.h \
	src/model_hf_config.c src/model_hf_config_write.c src/model_hf_config.h

# Damaged and inconsistent containers (issue 20, items 8-9).
TESTS += tests/model_damage.sh tests/model_checksums.sh
EXTRA_DIST += tests/model_damage.sh tests/damage_container.py tests/model_checksums.sh

# The embedded default model (data/default-model, trained by tools/train)
# and `coli perplexity`, the engine-side quality check of a model.

man_MANS += man/coli-perplexity.1
EXTRA_DIST += man/coli-perplexity.1.in

SLOW_TESTS += tests/model_default.sh
TESTS += tests/model_tokenizer.sh
EXTRA_DIST += tests/model_tokenizer.sh tests/model_default.sh

# Offline pipeline (never run by the build): see tools/train/README.md.
EXTRA_DIST += tools/train/README.md tools/train/loss.png tools/train/chat_template.jinja \
	tools/train/corpus.py tools/train/bpe.py tools/train/byte_alphabet.py tools/train/model.py tools/train/train.py \
	tools/train/container.py tools/train/analyze.py tools/train/plot.py

# Held-out fixtures of the tests (not installed).
EXTRA_DIST += data/README.md data/eval/val.txt data/eval/tokenizer.jsonl data/eval/expected.json

# The container, installed as $(pkgdatadir)/default-model (where model_dir.c
# looks) and shipped by make dist. One directory variable per subdirectory:
# nobase_ would keep the data/ prefix in the installed path.
defaultmodeldir = $(pkgdatadir)/default-model
dist_defaultmodel_DATA = data/default-model/manifest.json 
defaultmodel_densedir = $(pkgdatadir)/default-model/dense
dist_defaultmodel_dense_DATA = data/default-model/dense/embed.bin data/default-model/dense/head.bin data/default-model/dense/layer-000.bin data/default-model/dense/layer-001.bin data/default-model/dense/layer-002.bin data/default-model/dense/layer-003.bin 
defaultmodel_expertsdir = $(pkgdatadir)/default-model/experts
dist_defaultmodel_experts_DATA = data/default-model/experts/shard-001.bin data/default-model/experts/shard-002.bin data/default-model/experts/shard-003.bin 
defaultmodel_mtpdir = $(pkgdatadir)/default-model/mtp
dist_defaultmodel_mtp_DATA = data/default-model/mtp/layer-004.bin 
defaultmodel_tokenizerdir = $(pkgdatadir)/default-model/tokenizer
dist_defaultmodel_tokenizer_DATA = data/default-model/tokenizer/tokenizer.json data/default-model/tokenizer/tokenizer_config.json 
