# src/model.mk: owned by its module; appends to the lists in Makefile.am.
# The model: its configuration, the container reader (manifest, weight
# memory), binding tensors for the forward pass, finding the model directory.
libcoli_a_SOURCES += \
	src/model_config.h src/model.c src/model_bind.c src/model.h \
	src/model_dir.c src/model_dir.h \
	src/model_container.c src/model_container.h \
	src/model_weight_mem.c src/model_weight_mem.h \
	src/model_manifest.c src/model_manifest.h

# Damaged and inconsistent containers (issue 20, items 8-9).
TESTS += tests/model_damage.sh tests/model_checksums.sh
EXTRA_DIST += tests/model_damage.sh tests/damage_container.py tests/model_checksums.sh
