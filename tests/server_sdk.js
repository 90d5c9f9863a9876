// server_sdk.js - the official OpenAI and Anthropic SDKs against a live
// `coli serve` (started by server_sdk.sh; URL in argv[2], key in COLI_TEST_KEY).
// Checks the shapes the SDKs parse, streaming order, usage, stop strings and
// that errors surface as the SDK's APIError subclasses with the right status.
'use strict';
const assert = require('assert');
const { load, clients, check, run, passed } = require('./sdk_clients.js');

const sdk = load(false);
const { OpenAI, Anthropic } = sdk;
const url = process.argv[2];            // http://127.0.0.1:PORT/v1
const { oai, ant, base } = clients(sdk, url, process.env.COLI_TEST_KEY);
const msgs = [{ role: 'system', content: 'be brief' }, { role: 'user', content: 'Hello there' }];

async function expectStatus(status, cls, fn) {
	try {
		await fn();
	} catch (e) {
		assert.ok(e instanceof cls, `expected ${cls.name}, got ${e && e.constructor && e.constructor.name}: ${e}`);
		assert.strictEqual(e.status, status);
		return e;
	}
	assert.fail(`expected HTTP ${status}`);
}

async function main() {
	let modelId;
	await check('models.list', async () => {
		const page = await oai.models.list();
		assert.ok(page.data.length >= 1);
		modelId = page.data[0].id;
		assert.strictEqual(page.data[0].object, 'model');
		const m = await oai.models.retrieve(modelId);
		assert.strictEqual(m.id, modelId);
	});

	let greedy;
	await check('chat non-stream', async () => {
		const r = await oai.chat.completions.create({ model: modelId, messages: msgs, max_tokens: 12, temperature: 0 });
		assert.strictEqual(r.object, 'chat.completion');
		assert.ok(r.id.startsWith('chatcmpl-'));
		const c = r.choices[0];
		assert.strictEqual(c.message.role, 'assistant');
		assert.strictEqual(typeof c.message.content, 'string');
		assert.ok(['stop', 'length'].includes(c.finish_reason));
		assert.ok(r.usage.prompt_tokens > 0);
		assert.ok(r.usage.completion_tokens >= 1 && r.usage.completion_tokens <= 12);
		assert.strictEqual(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);
		assert.strictEqual(typeof r.usage.prompt_tokens_details.cached_tokens, 'number');
		greedy = c.message.content;
	});

	await check('chat stream', async () => {
		const stream = await oai.chat.completions.create({
			model: 'default', messages: msgs, max_tokens: 12, temperature: 0, stream: true,
			stream_options: { include_usage: true },
		});
		let text = '', ids = new Set(), created = new Set(), n = 0, finish = null, usage = null, sawRole = false;
		for await (const ch of stream) {
			ids.add(ch.id);
			created.add(ch.created);
			if (n++ === 0) {
				assert.strictEqual(ch.choices[0].delta.role, 'assistant');
				sawRole = true;
			}
			if (ch.usage) {
				assert.strictEqual(ch.choices.length, 0);
				usage = ch.usage;
				continue;
			}
			assert.strictEqual(finish, null, 'content after finish_reason');
			if (ch.choices[0].delta.content) text += ch.choices[0].delta.content;
			finish = ch.choices[0].finish_reason;
		}
		assert.ok(sawRole);
		assert.strictEqual(ids.size, 1);
		assert.strictEqual(created.size, 1);
		assert.ok(['stop', 'length'].includes(finish));
		assert.ok(usage && usage.completion_tokens >= 1);
		if (greedy !== undefined) assert.strictEqual(text, greedy, 'stream text != non-stream text (greedy)');
	});

	await check('chat stop string', async () => {
		// Greedy output is deterministic: stop on a piece of it.
		const full = await oai.chat.completions.create({ model: modelId, messages: msgs, max_tokens: 24, temperature: 0 });
		const t = full.choices[0].message.content;
		const chars = Array.from(t);
		if (chars.length < 6) return;
		const stop = chars.slice(3, 5).join('');
		const want = t.slice(0, t.indexOf(stop));
		const r = await oai.chat.completions.create({ model: modelId, messages: msgs, max_tokens: 24, temperature: 0, stop: [stop] });
		assert.strictEqual(r.choices[0].message.content, want);
		assert.strictEqual(r.choices[0].finish_reason, 'stop');
		const s = await oai.chat.completions.create({ model: modelId, messages: msgs, max_tokens: 24, temperature: 0, stop, stream: true });
		let st = '';
		for await (const ch of s) if (ch.choices[0] && ch.choices[0].delta.content) st += ch.choices[0].delta.content;
		assert.strictEqual(st, want);
	});

	await check('chat content parts and tools accepted', async () => {
		const r = await oai.chat.completions.create({
			model: modelId, max_completion_tokens: 4,
			messages: [{ role: 'developer', content: 'x' }, { role: 'user', content: [{ type: 'text', text: 'hi' }] }],
			tools: [{ type: 'function', function: { name: 'get_time', parameters: { type: 'object', properties: {} } } }],
		});
		assert.ok(r.choices[0].message);
	});

	await check('completions', async () => {
		const r = await oai.completions.create({ model: modelId, prompt: 'Once upon a time', max_tokens: 6, temperature: 0 });
		assert.strictEqual(r.object, 'text_completion');
		assert.strictEqual(typeof r.choices[0].text, 'string');
		const s = await oai.completions.create({ model: modelId, prompt: 'Once upon a time', max_tokens: 6, temperature: 0, stream: true });
		let t = '', fin = null;
		for await (const ch of s) {
			t += ch.choices[0].text;
			fin = ch.choices[0].finish_reason || fin;
		}
		assert.strictEqual(t, r.choices[0].text);
		assert.ok(fin);
		const ids = await oai.completions.create({ model: modelId, prompt: [1, 2, 3], max_tokens: 2 });
		assert.ok(ids.usage.prompt_tokens === 3);
	});

	await check('openai errors', async () => {
		await expectStatus(400, OpenAI.BadRequestError, () =>
			oai.chat.completions.create({ model: modelId, messages: msgs, n: 2 }));
		await expectStatus(400, OpenAI.BadRequestError, () =>
			oai.chat.completions.create({ model: modelId, messages: msgs,
				response_format: { type: 'json_schema', json_schema: { name: 'x' } } }));
		const e = await expectStatus(404, OpenAI.NotFoundError, () =>
			oai.chat.completions.create({ model: 'gpt-9-imaginary', messages: msgs }));
		assert.strictEqual(e.code, 'model_not_found');
		const bad = new OpenAI({ baseURL: url, apiKey: 'wrong', maxRetries: 0 });
		await expectStatus(401, OpenAI.AuthenticationError, () => bad.models.list());
		await expectStatus(400, OpenAI.BadRequestError, () =>
			oai.chat.completions.create({ model: modelId, messages: [], stream: true }));
	});

	await check('anthropic messages', async () => {
		const r = await ant.messages.create({
			model: 'claude-any', max_tokens: 10, temperature: 0, system: 'be brief',
			messages: [{ role: 'user', content: 'Hello there' }],
		});
		assert.strictEqual(r.type, 'message');
		assert.strictEqual(r.role, 'assistant');
		assert.strictEqual(r.content[0].type, 'text');
		assert.ok(['end_turn', 'max_tokens'].includes(r.stop_reason));
		assert.ok(r.usage.output_tokens >= 1 && r.usage.input_tokens >= 0);
		assert.strictEqual(typeof r.usage.cache_read_input_tokens, 'number');

		const events = [];
		const raw = await ant.messages.create({
			model: 'claude-any', max_tokens: 10, temperature: 0, stream: true, system: 'be brief',
			messages: [{ role: 'user', content: 'Hello there' }],
		});
		let text = '';
		for await (const ev of raw) {
			events.push(ev.type);
			if (ev.type === 'content_block_delta') text += ev.delta.text;
		}
		assert.strictEqual(events[0], 'message_start');
		assert.strictEqual(events[1], 'content_block_start');
		assert.strictEqual(events[events.length - 1], 'message_stop');
		assert.strictEqual(events[events.length - 2], 'message_delta');
		assert.strictEqual(events[events.length - 3], 'content_block_stop');
		assert.strictEqual(text, r.content[0].text);

		const helper = ant.messages.stream({
			model: 'claude-any', max_tokens: 10, temperature: 0, system: 'be brief',
			messages: [{ role: 'user', content: 'Hello there' }],
		});
		const fin = await helper.finalMessage();
		assert.strictEqual(fin.content[0].text, r.content[0].text);
	});

	await check('anthropic stop_sequences, tools and count_tokens', async () => {
		const base = { model: 'claude-any', max_tokens: 24, temperature: 0, messages: [{ role: 'user', content: 'Tell me' }] };
		const full = await ant.messages.create(base);
		const chars = Array.from(full.content[0].text);
		if (chars.length >= 6) {
			const stop = chars.slice(3, 5).join('');
			const r = await ant.messages.create({ ...base, stop_sequences: [stop] });
			assert.strictEqual(r.stop_reason, 'stop_sequence');
			assert.strictEqual(r.stop_sequence, stop);
			assert.strictEqual(r.content[0].text, full.content[0].text.slice(0, full.content[0].text.indexOf(stop)));
		}
		const t = await ant.messages.create({
			model: 'claude-any', max_tokens: 4,
			tools: [{ name: 'get_weather', description: 'w', input_schema: { type: 'object', properties: { city: { type: 'string' } } } }],
			messages: [
				{ role: 'user', content: 'weather?' },
				{ role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Oslo' } }] },
				{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'sunny' }] },
			],
		});
		assert.strictEqual(t.type, 'message');
		const c = await ant.messages.countTokens({ model: 'claude-any', messages: [{ role: 'user', content: 'Tell me' }] });
		assert.ok(c.input_tokens > 0);
	});

	await check('anthropic errors', async () => {
		await expectStatus(400, Anthropic.BadRequestError, () =>
			ant.messages.create({ model: 'x', messages: [{ role: 'user', content: 'hi' }] }));
		const bad = new Anthropic({ baseURL: base, apiKey: 'wrong', maxRetries: 0 });
		await expectStatus(401, Anthropic.AuthenticationError, () =>
			bad.messages.create({ model: 'x', max_tokens: 2, messages: [{ role: 'user', content: 'hi' }] }));
	});

	console.log(`${passed()} SDK checks passed`);
}

run(main);
