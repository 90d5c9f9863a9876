#include "config.h"
#include "cli.h"
#include "tokenizer.h"
int tokenize_chat(const coli_tokenizer *t, const char *path, const char *model_type, int gen_prompt);
int tokenize_chat(const coli_tokenizer *t, const char *path, const char *model_type, int gen_prompt)
{
	return COLI_EXIT_FAIL;
}
