/* quant_q8act_amx.h - the two halves of tests/quant_q8act_amx_test: the AMX
 * row kernels of quant_kernels_q8_amx.c on the real tiles (quant_q8act_amx.c)
 * and on emulated ones (quant_q8act_amxemu.c). Each returns the file's
 * tile row function for qtype, for every n (no VNNI fallback below 16
 * inputs), or NULL where it cannot run here. */
#ifndef COLI_TEST_QUANT_Q8ACT_AMX_H
#define COLI_TEST_QUANT_Q8ACT_AMX_H

#include "quant_kernels_q8.h"

coli_q8_rows_fn amx_real_rows(int qtype);
coli_q8_rows_fn amx_emu_rows(int qtype);
/* uses of the emulated tiles that real ones would refuse or misread */
int amx_emu_misuse(void);

#endif
