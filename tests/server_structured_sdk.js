// server_structured_sdk.js - structured output and logprobs with the
// official clients, unchanged, against `coli serve` on the default model
// (started by server_structured_sdk.sh; URL in argv[2]):
//   openai: zodResponseFormat + chat.completions.parse (the SDK parses and
//   validates the reply with zod; number bounds included), the same streamed
//   (chat.completions.stream + finalChatCompletion), a forced tool through
//   zodFunction (parsed_arguments), logprobs fields;
//   @anthropic-ai/sdk: a forced tool, streamed and not.
'use strict';
const assert = require('assert');
const { load, clients, check, run, passed } = require('./sdk_clients.js');

const sdk = load(true);
const { zodResponseFormat, zodFunction } = sdk.zodHelpers;
const z = sdk.z;
const url = process.argv[2];
const { oai, ant } = clients(sdk, url, 'none');
const msgs = [{ role: 'user', content: 'Tell me a fortune in English.' }];
const Fortune = z.object({
	fortune: z.string().max(40),
	lucky_number: z.number().int(),
	language: z.enum(['en', 'de', 'es']),
	tags: z.array(z.string().max(10)).max(3),
});

async function main() {
	const model = (await oai.models.list()).data[0].id;
	await check('parse with zodResponseFormat', async () => {
		for (const seed of [1, 2, 3]) {
			const c = await oai.chat.completions.parse({ model, messages: msgs, seed, temperature: 0.8,
				max_tokens: 300, response_format: zodResponseFormat(Fortune, 'fortune') });
			const m = c.choices[0].message;
			assert.strictEqual(c.choices[0].finish_reason, 'stop');
			assert.ok(m.parsed, 'parsed');
			Fortune.parse(m.parsed);
			assert.deepStrictEqual(m.parsed, JSON.parse(m.content));
		}
	});
	await check('zod number bounds (.min/.max/.gt on numbers and integers)', async () => {
		const Reading = z.object({ confidence: z.number().min(0).max(1), celsius: z.number().gt(-40).lte(60),
			count: z.number().int().min(1).max(12) });
		for (const seed of [7, 8]) {
			const c = await oai.chat.completions.parse({ model, messages: msgs, seed, temperature: 0.8,
				max_tokens: 200, response_format: zodResponseFormat(Reading, 'reading') });
			assert.strictEqual(c.choices[0].finish_reason, 'stop');
			Reading.parse(c.choices[0].message.parsed);
		}
	});
	await check('stream with zodResponseFormat', async () => {
		const stream = oai.chat.completions.stream({ model, messages: msgs, seed: 4, temperature: 0.8,
			max_tokens: 300, response_format: zodResponseFormat(Fortune, 'fortune') });
		let deltas = '';
		stream.on('content.delta', (e) => { deltas += e.delta; });
		const c = await stream.finalChatCompletion();
		Fortune.parse(c.choices[0].message.parsed);
		assert.strictEqual(deltas, c.choices[0].message.content);
	});
	await check('forced tool with zodFunction', async () => {
		const Weather = z.object({ city: z.string().max(20), days: z.number().int() });
		const c = await oai.chat.completions.parse({ model, messages: msgs, seed: 5, temperature: 0.8,
			max_tokens: 200, tools: [zodFunction({ name: 'get_weather', parameters: Weather })],
			tool_choice: { type: 'function', function: { name: 'get_weather' } } });
		const call = c.choices[0].message.tool_calls[0];
		assert.strictEqual(c.choices[0].finish_reason, 'tool_calls');
		assert.strictEqual(call.function.name, 'get_weather');
		Weather.parse(call.function.parsed_arguments);
	});
	await check('logprobs', async () => {
		const c = await oai.chat.completions.create({ model, messages: msgs, max_tokens: 5, seed: 6,
			logprobs: true, top_logprobs: 3 });
		const lp = c.choices[0].logprobs.content;
		assert.strictEqual(lp.length, c.usage.completion_tokens);
		for (const e of lp) {
			assert.strictEqual(typeof e.token, 'string');
			assert.ok(e.logprob <= 0 && Array.isArray(e.bytes) && e.top_logprobs.length === 3);
			assert.ok(e.top_logprobs[0].logprob >= e.top_logprobs[1].logprob);
		}
		assert.strictEqual(Buffer.from(lp.flatMap((e) => e.bytes)).toString('utf8'), c.choices[0].message.content);
		const s = await oai.chat.completions.create({ model, messages: msgs, max_tokens: 5, seed: 6,
			logprobs: true, top_logprobs: 3, stream: true });
		const streamed = [];
		for await (const ch of s)
			if (ch.choices.length && ch.choices[0].logprobs)
				streamed.push(...ch.choices[0].logprobs.content);
		assert.deepStrictEqual(streamed, lp);
		const t = await oai.completions.create({ model, prompt: 'Fortune:', max_tokens: 4, logprobs: 2 });
		assert.strictEqual(t.choices[0].logprobs.tokens.length, t.choices[0].logprobs.token_logprobs.length);
	});
	const tool = { name: 'get_weather', input_schema: { type: 'object', properties: { city: { type: 'string',
		maxLength: 20 }, days: { type: 'integer' } }, required: ['city', 'days'], additionalProperties: false } };
	await check('anthropic forced tool', async () => {
		const m = await ant.messages.create({ model, max_tokens: 200, temperature: 0.8, messages: msgs,
			tools: [tool], tool_choice: { type: 'tool', name: 'get_weather' } });
		assert.strictEqual(m.stop_reason, 'tool_use');
		const use = m.content.find((b) => b.type === 'tool_use');
		assert.strictEqual(use.name, 'get_weather');
		assert.strictEqual(typeof use.input.city, 'string');
		assert.ok(Number.isInteger(use.input.days));
		const s = ant.messages.stream({ model, max_tokens: 200, temperature: 0.8, messages: msgs,
			tools: [tool], tool_choice: { type: 'tool', name: 'get_weather' } });
		const f = await s.finalMessage();
		const u2 = f.content.find((b) => b.type === 'tool_use');
		assert.strictEqual(f.stop_reason, 'tool_use');
		assert.ok(u2 && typeof u2.input.city === 'string' && Number.isInteger(u2.input.days));
	});
	console.log(`${passed()} checks passed`);
}

run(main);
