// server_responses_sdk.js - the Responses API through the official openai
// npm client, unchanged, against `coli serve` on a tiny GLM-5-template
// model (started by server_responses_sdk.sh; URL in argv[2]):
// responses.create, responses.stream (events and finalResponse; a function
// call's arguments in several deltas),
// responses.parse with zodTextFormat, function calling with
// zodResponsesFunction and its function_call_output sent back through
// previous_response_id (cached_tokens = at least the stored prompt),
// responses.retrieve and responses.delete.
'use strict';
const assert = require('assert');
const { load, clients, check, run, passed } = require('./sdk_clients.js');

const sdk = load(true);
const { zodTextFormat, zodResponsesFunction } = sdk.zodHelpers;
const z = sdk.z;
const { oai } = clients(sdk, process.argv[2], 'none');
const OFF = { effort: 'none' };

async function main() {
	const model = (await oai.models.list()).data[0].id;
	let first;
	await check('responses.create', async () => {
		first = await oai.responses.create({ model, input: 'Why is the sky blue?', max_output_tokens: 6,
			temperature: 0, reasoning: OFF, instructions: 'Be brief.' });
		assert.match(first.id, /^resp_[0-9a-f]{32}$/);
		assert.strictEqual(first.status, 'incomplete');
		assert.deepStrictEqual(first.incomplete_details, { reason: 'max_output_tokens' });
		assert.strictEqual(first.output[0].type, 'message');
		assert.strictEqual(first.output_text, first.output[0].content[0].text);
		assert.strictEqual(first.usage.output_tokens, 6);
		assert.strictEqual(first.usage.total_tokens, first.usage.input_tokens + 6);
	});
	await check('responses.stream', async () => {
		const stream = oai.responses.stream({ model, input: 'Why is the sky blue?', max_output_tokens: 6,
			temperature: 0, reasoning: OFF, instructions: 'Be brief.' });
		let deltas = '';
		const types = [];
		stream.on('response.output_text.delta', (e) => { deltas += e.delta; });
		stream.on('event', (e) => types.push(e.type));
		const r = await stream.finalResponse();
		assert.strictEqual(deltas, r.output_text);
		assert.strictEqual(r.output_text, first.output_text, 'the same greedy answer as create');
		assert.deepStrictEqual([types[0], types[1], types[types.length - 1]],
			['response.created', 'response.in_progress', 'response.incomplete']);
	});
	await check('responses.stream with reasoning', async () => {
		const stream = oai.responses.stream({ model, input: 'Why is the sky blue?', max_output_tokens: 6,
			temperature: 0, reasoning: { effort: 'high' } });
		let rdeltas = '';
		stream.on('response.reasoning_text.delta', (e) => { rdeltas += e.delta; });
		const r = await stream.finalResponse();
		assert.strictEqual(r.output[0].type, 'reasoning');
		assert.strictEqual(r.output[0].content[0].text, rdeltas);
		assert.strictEqual(r.usage.output_tokens_details.reasoning_tokens, 6);
	});
	await check('responses.parse with zodTextFormat', async () => {
		const Person = z.object({ name: z.string().max(20), age: z.number().int() });
		const r = await oai.responses.parse({ model, input: 'A person?', max_output_tokens: 120, temperature: 0,
			reasoning: OFF, text: { format: zodTextFormat(Person, 'person') } });
		assert.strictEqual(r.status, 'completed');
		Person.parse(r.output_parsed);
		assert.deepStrictEqual(r.output_parsed, JSON.parse(r.output_text));
	});
	await check('function calling and previous_response_id', async () => {
		const Weather = z.object({ city: z.string().max(12), days: z.number().int().min(1).max(7) });
		const tools = [zodResponsesFunction({ name: 'get_weather', parameters: Weather, description: 'Weather' }),
			{ type: 'web_search' }];
		const r = await oai.responses.parse({ model, input: 'Weather in Paris?', max_output_tokens: 80,
			temperature: 0, reasoning: OFF, tools, tool_choice: { type: 'function', name: 'get_weather' } });
		const call = r.output.find((o) => o.type === 'function_call');
		assert.ok(call, 'a function_call item');
		assert.strictEqual(call.name, 'get_weather');
		Weather.parse(call.parsed_arguments);
		const back = await oai.responses.create({ model, previous_response_id: r.id, max_output_tokens: 4,
			temperature: 0, reasoning: OFF, tools: [tools[0]],
			input: [{ type: 'function_call_output', call_id: call.call_id, output: 'sunny' }] });
		assert.strictEqual(back.previous_response_id, r.id);
		assert.ok(back.usage.input_tokens_details.cached_tokens >= r.usage.input_tokens,
			`cached ${back.usage.input_tokens_details.cached_tokens} of ${r.usage.input_tokens}`);
		const next = await oai.responses.create({ model, previous_response_id: back.id, input: 'And tomorrow?',
			max_output_tokens: 3, temperature: 0, reasoning: OFF, tools: [tools[0]] });
		const c = next.usage.input_tokens_details.cached_tokens;
		assert.ok(c >= back.usage.input_tokens && c <= back.usage.input_tokens + back.usage.output_tokens,
			`cached ${c} of ${JSON.stringify(back.usage)}`);
	});
	await check('responses.stream of a function call', async () => {
		const Weather = z.object({ city: z.string().max(12), days: z.number().int().min(1).max(7) });
		const stream = oai.responses.stream({ model, input: 'Weather in Paris?', max_output_tokens: 80,
			temperature: 0, reasoning: OFF, tool_choice: 'required',
			tools: [zodResponsesFunction({ name: 'get_weather', parameters: Weather })] });
		const deltas = [];
		let done;
		stream.on('response.function_call_arguments.delta', (e) => deltas.push(e.delta));
		stream.on('response.function_call_arguments.done', (e) => { done = e.arguments; });
		const r = await stream.finalResponse();
		const call = r.output.find((o) => o.type === 'function_call');
		assert.ok(deltas.length > 1, `arguments streamed in ${deltas.length} deltas`);
		assert.strictEqual(deltas.join(''), call.arguments);
		assert.strictEqual(done, call.arguments);
		Weather.parse(JSON.parse(call.arguments));
	});
	await check('responses.retrieve and responses.delete', async () => {
		const got = await oai.responses.retrieve(first.id);
		assert.strictEqual(got.id, first.id);
		assert.strictEqual(got.output_text, first.output_text);
		await oai.responses.delete(first.id);
		await assert.rejects(oai.responses.retrieve(first.id), (e) => e.status === 404);
	});
	console.log(`responses sdk: ${passed()} checks passed`);
}
run(main);
