// sdk_clients.js - what the SDK tests (server_sdk.js, server_structured_sdk.js,
// server_thinking_sdk.js) share: the official npm clients loaded from
// tests/node/node_modules, clients pointed at the server under test, and the
// named-check runner.
//
// A missing package exits 77; the .sh wrapper turns that into test_skip, a
// skip on a developer's machine and a failure under CI=true, so a check
// never passes when it did not run.
'use strict';
const { createRequire } = require('module');
const path = require('path');

// { OpenAI, Anthropic } and, when withZod, { zodHelpers, z } too.
function load(withZod) {
	const req = createRequire(path.resolve(process.env.top_srcdir || '.', 'tests', 'node', 'package.json'));
	const names = ['openai', '@anthropic-ai/sdk'].concat(withZod ? ['zod'] : []);
	const sdk = {};
	try {
		sdk.OpenAI = req('openai');
		sdk.Anthropic = req('@anthropic-ai/sdk');
		if (withZod) {
			sdk.zodHelpers = req('openai/helpers/zod');
			sdk.z = req('zod');
		}
	} catch (e) {
		console.log('SKIP: ' + names.join(' / ') + ' not installed in tests/node (' + e.message + ')');
		process.exit(77);
	}
	sdk.OpenAI = sdk.OpenAI.default || sdk.OpenAI;
	sdk.Anthropic = sdk.Anthropic.default || sdk.Anthropic;
	return sdk;
}

// An OpenAI client on url (http://127.0.0.1:PORT/v1) and an Anthropic one
// on the same server (no /v1: the SDK adds it), no retries.
function clients(sdk, url, key) {
	const base = url.replace(/\/v1$/, '');
	return {
		base,
		oai: new sdk.OpenAI({ baseURL: url, apiKey: key, maxRetries: 0 }),
		ant: new sdk.Anthropic({ baseURL: base, apiKey: key, maxRetries: 0 }),
	};
}

// check(name, fn) runs one named check: a failure is printed with its stack
// and makes the exit status 1, and the rest still run.
let passed = 0;
async function check(name, fn) {
	try {
		await fn();
		passed++;
	} catch (e) {
		console.error(`FAIL ${name}:`, e && e.stack ? e.stack : e);
		process.exitCode = 1;
	}
}

// Run the test's async main; an exception outside a check fails the test.
function run(main) {
	main().catch((e) => {
		console.error(e);
		process.exit(1);
	});
}

module.exports = { load, clients, check, run, passed: () => passed };
