/* chat_reasoning.c - a past turn's reasoning for the built-in renderers.
 *
 * Messages carry an assistant turn's reasoning apart from its content
 * (OpenAI reasoning_content, Anthropic thinking blocks), which is what a
 * checkpoint's own template reads (chat_template_jinja.c passes it as
 * reasoning_content). The built-in renderers know only content, so for
 * them the reasoning goes in front of it as "<think>R</think>", the form
 * GLM-5's template renders a kept reasoning in and the one it splits
 * back apart; a content that already holds "</think>" is kept as sent. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "chat_template.h"

coli_chat_msg *coli_chat_fold_reasoning(const coli_chat_msg *msgs, int n, int *oom)
{
	*oom = 0;
	int any = 0;
	for (int i = 0; i < n && !any; i++)
		any = msgs[i].reasoning_content && msgs[i].reasoning_content[0];
	if (!any)
		return NULL;
	coli_chat_msg *m = malloc(sizeof *m * (size_t)n);
	if (!m) {
		*oom = 1;
		return NULL;
	}
	memcpy(m, msgs, sizeof *m * (size_t)n);
	for (int i = 0; i < n; i++) {
		const char *r = msgs[i].reasoning_content, *c = msgs[i].content ? msgs[i].content : "";
		m[i].reasoning_content = NULL;
		if (!r || !r[0] || strstr(c, "</think>"))
			continue;
		size_t nr = strlen(r), nc = strlen(c);
		char *s = malloc(nr + nc + sizeof "<think></think>");
		if (!s) {
			coli_chat_fold_reasoning_free(m, msgs, i);
			*oom = 1;
			return NULL;
		}
		memcpy(s, "<think>", 7);
		memcpy(s + 7, r, nr);
		memcpy(s + 7 + nr, "</think>", 8);
		memcpy(s + 15 + nr, c, nc + 1);
		m[i].content = s;
	}
	return m;
}

void coli_chat_fold_reasoning_free(coli_chat_msg *folded, const coli_chat_msg *msgs, int n)
{
	if (!folded)
		return;
	for (int i = 0; i < n; i++)
		if (folded[i].content != msgs[i].content)
			free((char *)folded[i].content);
	free(folded);
}
