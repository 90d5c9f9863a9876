/* chat_template_detect.c - which chat template a checkpoint uses: its
 * own (tokenizer_config.json's, checked here and interpreted by
 * chat_template_jinja.c), else the family its model type names, written
 * out in C (chat_template.c). */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "chat_template.h"

int coli_chat_template_detect(const coli_tokenizer *t, const char *model_type,
			      coli_chat_template *out, coli_err *err)
{
	const char *tx = coli_tokenizer_chat_template(t);
	memset(out, 0, sizeof *out);
	out->enable_thinking = -1;
	out->bos_text = coli_tokenizer_token_text(t, coli_tokenizer_bos_id(t));
	out->eos_text = coli_tokenizer_token_text(t, coli_tokenizer_eos_id(t));
	if (!out->bos_text)
		out->bos_text = "";
	if (!out->eos_text)
		out->eos_text = "";
	if (tx) {
		/* the checkpoint's own template, as Hugging Face renders it */
		const char *tu = coli_tokenizer_chat_template_tool_use(t);
		int rc = coli_chat_jinja_check(tx, err);
		if (rc == 0 && tu)
			rc = coli_chat_jinja_check(tu, err);
		if (rc < 0)
			return rc;
		out->family = COLI_CHAT_JINJA;
		out->jinja = tx;
		out->jinja_tool_use = tu;
		return 0;
	}
	/* no template in tokenizer_config.json: the model type decides */
	if (model_type && (!strcmp(model_type, "deepseek_v3") || !strcmp(model_type, "kimi_k2")))
		out->family = COLI_CHAT_DEEPSEEK_V3;
	else if (model_type && (!strncmp(model_type, "glm", 3)))
		out->family = COLI_CHAT_GLM5;
	if (out->family)
		return 0;
	return coli_err_set(err, -ENOTSUP, "no chat_template in tokenizer_config.json and model type %s has no known template",
			    model_type ? model_type : "(unknown)");
}
