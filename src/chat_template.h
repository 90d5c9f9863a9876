/* chat_template.h - turning a message list into prompt text. A checkpoint
 * that ships a template (chat_template.jinja, or tokenizer_config.json's
 * chat_template) has it rendered by the Jinja interpreter (chat_jinja.h)
 * as Hugging Face renders it; the built-in C renderers of the supported
 * families serve only checkpoints without one (chosen by model type).
 * Both are compared in tests with reference Jinja implementations. */
#ifndef COLI_CHAT_TEMPLATE_H
#define COLI_CHAT_TEMPLATE_H

#include <stddef.h>

#include "coli_err.h"
#include "tokenizer.h"

enum coli_chat_family {
	COLI_CHAT_UNKNOWN = 0,
	COLI_CHAT_DEEPSEEK_V3,
	COLI_CHAT_GLM5,
	COLI_CHAT_DEFAULT_MODEL,   /* the template of data/'s default model */
	COLI_CHAT_CHATML,          /* qwen-style <|im_start|> */
	COLI_CHAT_LLAMA3,
	/* DeepSeek-V3-0324 / R1 revision of the DeepSeek template (tool calls
	 * after content, "</think>" stripped from past answers); coli synth
	 * writes this one. */
	COLI_CHAT_DEEPSEEK_R1,
	COLI_CHAT_JINJA,           /* the checkpoint's own template, interpreted */
};

typedef struct coli_chat_msg {
	const char *role;      /* "system", "user", "assistant", "tool" ("developer" maps to system) */
	const char *content;   /* UTF-8 text */
	/* Tool calling (optional; NULL/0 when unused). JSON text. */
	const char *tool_calls_json;   /* assistant: OpenAI-style tool_calls array */
	const char *tool_call_id;      /* tool: id of the call answered */
	const char *name;              /* tool: function name */
	const char *reasoning_content; /* assistant: its reasoning, or NULL */
} coli_chat_msg;

typedef struct coli_chat_template {
	int family;
	const char *bos_text;  /* BOS as text, as the template writes it */
	const char *eos_text;
	/* chat_template_kwargs.enable_thinking: -1 as the template decides
	 * (set by detect), 0 off, 1 on. GLM-5 opens "<think>" unless it is 0
	 * (then "</think>"); the DeepSeek families let the model open it. */
	int enable_thinking;
	/* COLI_CHAT_JINJA: the template's source (owned by the tokenizer) */
	const char *jinja;
	const char *jinja_tool_use;   /* its "tool_use" variant, or NULL */
	/* chat_template_kwargs as a JSON object text, per request (may be
	 * NULL): each key becomes a template variable */
	const char *kwargs_json;
} coli_chat_template;

/* The rendered prompt leaves a thinking block open ("<think>" at its end):
 * the answer begins with reasoning, until "</think>". */
int coli_chat_opens_thinking(const char *prompt);

/* The template of a tokenizer: its own (checked to parse), else the
 * built-in one of the model type's family. */
int coli_chat_template_detect(const coli_tokenizer *t, const char *model_type,
			      coli_chat_template *out, coli_err *err);
/* Render messages; with add_generation_prompt the assistant turn is opened.
 * tools_json (may be NULL): OpenAI-style tools array as JSON text. */
/* chat_reasoning.c: for the built-in renderers, a copy of msgs whose
 * assistant turns with reasoning_content have content "<think>R</think>C"
 * (reasoning_content cleared); NULL when none has any (*oom set when the
 * copy could not be made). Free with coli_chat_fold_reasoning_free. */
coli_chat_msg *coli_chat_fold_reasoning(const coli_chat_msg *msgs, int n, int *oom);
void coli_chat_fold_reasoning_free(coli_chat_msg *folded, const coli_chat_msg *msgs, int n);

int coli_chat_render(const coli_chat_template *tpl, const coli_chat_msg *msgs, int n,
		     const char *tools_json, int add_generation_prompt, char **out,
		     coli_err *err);

/* The prompt of one new turn appended to a persisted session, whose history
 * already holds the earlier turns as tokens: msgs are this turn's messages
 * (a leading system message only on the first turn), rendered with the
 * generation prompt; with history, the BOS the template writes is dropped,
 * and an answer that ended without its end-of-turn token (length,
 * cancelled) is closed with eos_text first so the template's structure
 * holds. An answer that ended with the end-of-sequence token already has
 * it in the history (the engine evaluates it). */
int coli_chat_render_turn(const coli_chat_template *tpl, const coli_chat_msg *msgs, int n,
			  int has_history, int prev_unfinished, char **out, coli_err *err);

/* chat_template_jinja.c: render msgs with tpl->jinja (the variables
 * Hugging Face passes: messages, tools, documents, add_generation_prompt,
 * bos_token, eos_token, then chat_template_kwargs). */
int coli_chat_render_jinja(const coli_chat_template *tpl, const coli_chat_msg *msgs, int n,
			   const char *tools_json, int add_generation_prompt, char **out,
			   coli_err *err);
/* Check that a template parses; the error names its line. */
int coli_chat_jinja_check(const char *src, coli_err *err);

#endif
