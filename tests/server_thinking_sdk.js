// server_thinking_sdk.js - reasoning with the official clients, unchanged,
// against `coli serve` on a tiny model whose chat template (GLM-5's) opens
// a thinking block (started by server_thinking.sh; argv: URL, the id of
// "</think>"). logit_bias on "</think>" makes the random model's answer
// deterministic: -100 never closes the block, +100 closes it at once.
//   openai: message.reasoning_content and usage.completion_tokens_details.
//   reasoning_tokens, streamed delta.reasoning_content spelling the same
//   text, chat.completions.parse with zodResponseFormat where the prompt
//   opened a thinking block (the constraint applies after "</think>");
//   @anthropic-ai/sdk: thinking: {type: "enabled", budget_tokens} gives a
//   "thinking" content block (with a signature) first, not streamed and
//   streamed (MessageStream's 'thinking' events = thinking_delta, the same
//   text in finalMessage), max_tokens counting the thinking; without
//   thinking asked, no thinking block.
'use strict';
const assert = require('assert');
const { load, clients, check, run, passed } = require('./sdk_clients.js');

const sdk = load(true);
const { zodResponseFormat } = sdk.zodHelpers;
const z = sdk.z;
const url = process.argv[2];
const END = process.argv[3];
const { oai, ant } = clients(sdk, url, 'none');
const messages = [{ role: 'user', content: 'Why is the sky blue?' }];

async function main() {
	const model = (await oai.models.list()).data[0].id;
	await check('openai reasoning_content, not streamed and streamed', async () => {
		const body = { model, messages, max_tokens: 8, temperature: 0, logit_bias: { [END]: -100 } };
		const c = await oai.chat.completions.create(body);
		const m = c.choices[0].message;
		assert.ok(typeof m.reasoning_content === 'string' && m.reasoning_content.length > 0, 'reasoning_content');
		assert.strictEqual(m.content, '');
		assert.strictEqual(c.choices[0].finish_reason, 'length');
		assert.strictEqual(c.usage.completion_tokens, 8);
		assert.strictEqual(c.usage.completion_tokens_details.reasoning_tokens, 8);
		const s = await oai.chat.completions.create({ ...body, stream: true,
			stream_options: { include_usage: true } });
		let reasoning = '', content = '', usage = null;
		for await (const ch of s) {
			if (ch.usage)
				usage = ch.usage;
			if (!ch.choices.length)
				continue;
			reasoning += ch.choices[0].delta.reasoning_content || '';
			content += ch.choices[0].delta.content || '';
		}
		assert.strictEqual(reasoning, m.reasoning_content);
		assert.strictEqual(content, '');
		assert.strictEqual(usage.completion_tokens_details.reasoning_tokens, 8);
	});
	await check('openai parse() after the thinking', async () => {
		const Answer = z.object({ answer: z.enum(['yes', 'no', 'maybe']) });
		const c = await oai.chat.completions.parse({ model, messages, max_tokens: 40, temperature: 0.8, seed: 3,
			logit_bias: { [END]: 100 }, response_format: zodResponseFormat(Answer, 'answer') });
		const m = c.choices[0].message;
		assert.strictEqual(c.choices[0].finish_reason, 'stop');
		Answer.parse(m.parsed);
		assert.strictEqual(c.usage.completion_tokens_details.reasoning_tokens, 1);
	});
	const thinking = { type: 'enabled', budget_tokens: 1024 };
	let whole = null;
	await check('anthropic thinking block', async () => {
		whole = await ant.messages.create({ model, max_tokens: 8, temperature: 0, messages, thinking });
		const b = whole.content[0];
		assert.strictEqual(b.type, 'thinking');
		assert.ok(typeof b.thinking === 'string' && b.thinking.length > 0, 'thinking text');
		assert.strictEqual(typeof b.signature, 'string');
		assert.strictEqual(whole.stop_reason, 'max_tokens');
		assert.strictEqual(whole.usage.output_tokens, 8);
	});
	await check('anthropic thinking streamed', async () => {
		const s = ant.messages.stream({ model, max_tokens: 8, temperature: 0, messages, thinking });
		let deltas = '', starts = [];
		s.on('thinking', (delta) => { deltas += delta; });
		s.on('streamEvent', (e) => {
			if (e.type === 'content_block_start')
				starts.push(e.content_block.type);
		});
		const f = await s.finalMessage();
		assert.strictEqual(starts[0], 'thinking');
		assert.strictEqual(f.content[0].type, 'thinking');
		assert.strictEqual(deltas, f.content[0].thinking);
		assert.ok(whole && f.content[0].thinking === whole.content[0].thinking, 'the same thinking as not streamed');
		assert.strictEqual(typeof f.content[0].signature, 'string');
		assert.strictEqual(f.stop_reason, 'max_tokens');
	});
	await check('anthropic no thinking unless asked', async () => {
		const m = await ant.messages.create({ model, max_tokens: 4, temperature: 0, messages });
		assert.ok(m.content.every((b) => b.type !== 'thinking'), JSON.stringify(m.content));
	});
	console.log(`${passed()} checks passed`);
}

run(main);
