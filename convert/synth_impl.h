/* synth_impl.h - internals shared by the synth_*.c files. */
#ifndef COLI_SYNTH_IMPL_H
#define COLI_SYNTH_IMPL_H

#include "synth.h"

#define SYNTH_FP8_BLOCK 128

/* synth_weights.c: declare every tensor and stream its data. */
int synth_weights_write(const char *out_dir, const synth_opts *o, coli_err *err);

#endif
