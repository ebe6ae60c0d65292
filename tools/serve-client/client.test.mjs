// client.test.mjs — the real OpenAI client (npm openai, pinned) against
// `waste serve` on the bundled kimi-mini (a chat.json container) and on a
// K3-markup container (tiny-tok.waste speaks XTML). Greedy is deterministic,
// so answers compare exactly (tolerance: none); sampling compares by seed.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import OpenAI from 'openai';
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startServer, startMiniAndK3, kimiMini, metrics } from './server.mjs';

let servers;
let mini;
let k3;
let client;
let k3client;

before(async () => {
  servers = await startMiniAndK3();
  ({ mini, k3, client, k3client } = servers);
});

after(async () => {
  for (const r of await servers.stop()) assert.equal(r.code, 0, 'SIGTERM ends the server with exit 0');
});

const question = [{ role: 'user', content: 'In the beginning God created' }];

async function collect(stream) {
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}

test('models: the one loaded model, with its shape', async () => {
  const list = await client.models.list();
  assert.equal(list.data.length, 1);
  assert.equal(list.data[0].id, 'kimi-mini');
  assert.ok(list.data[0].waste.context_length > 0);
  const one = await client.models.retrieve('kimi-mini');
  assert.equal(one.id, 'kimi-mini');
  await assert.rejects(client.models.retrieve('nope'), (e) => e.status === 404);
});

test('blocking chat: a chat.completion with usage and waste', async () => {
  const r = await client.chat.completions.create({ model: 'anything', messages: question, max_tokens: 24 });
  assert.equal(r.object, 'chat.completion');
  assert.match(r.id, /^chatcmpl-/);
  assert.equal(r.model, 'kimi-mini');
  const choice = r.choices[0];
  assert.equal(choice.message.role, 'assistant');
  assert.ok(['stop', 'length'].includes(choice.finish_reason));
  assert.equal(typeof choice.message.content, 'string');
  assert.ok(r.usage.prompt_tokens > 0);
  assert.ok(r.usage.completion_tokens > 0 && r.usage.completion_tokens <= 24);
  assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);
  assert.equal(r.waste.tokens_generated, r.usage.completion_tokens);
  assert.ok(r.waste.experts_hit + r.waste.experts_missed > 0, 'a MoE model touched experts');
});

test('streaming chat reassembles exactly the blocking answer; include_usage', async () => {
  const body = { model: 'x', messages: question, max_tokens: 24 };
  const blocking = await client.chat.completions.create(body);
  const chunks = await collect(await client.chat.completions.create({ ...body, stream: true, stream_options: { include_usage: true } }));
  assert.deepEqual(chunks[0].choices[0].delta, { role: 'assistant', content: '' });
  let text = '';
  let finish = null;
  let usage = null;
  for (const c of chunks) {
    assert.equal(c.object, 'chat.completion.chunk');
    if (c.choices.length) {
      text += c.choices[0].delta.content ?? '';
      if (c.choices[0].finish_reason) finish = c.choices[0].finish_reason;
    } else if (c.usage) usage = c.usage;
  }
  assert.equal(text, blocking.choices[0].message.content ?? '');
  assert.equal(finish, blocking.choices[0].finish_reason);
  assert.deepEqual(usage.completion_tokens, blocking.usage.completion_tokens);
  assert.ok(chunks.some((c) => c.waste), 'a waste chunk before [DONE]');
});

test('stop strings cut the content, blocking and streaming, and are never sent', async () => {
  const full = (await client.chat.completions.create({ model: 'x', messages: question, max_tokens: 40 })).choices[0].message.content;
  assert.ok(full && full.length > 12, `a long enough answer to cut: ${JSON.stringify(full)}`);
  const stop = full.slice(6, 9);
  const expected = full.slice(0, full.indexOf(stop));
  const r = await client.chat.completions.create({ model: 'x', messages: question, max_tokens: 40, stop: [stop] });
  assert.equal(r.choices[0].message.content || '', expected);
  assert.equal(r.choices[0].finish_reason, 'stop');
  const chunks = await collect(await client.chat.completions.create({ model: 'x', messages: question, max_tokens: 40, stop, stream: true }));
  const text = chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('');
  assert.equal(text, expected);
});

test('seed: the same seed gives the same sampled text', async () => {
  const body = { model: 'x', messages: question, max_tokens: 20, temperature: 1.0, top_p: 0.95 };
  const a = await client.chat.completions.create({ ...body, seed: 42 });
  const b = await client.chat.completions.create({ ...body, seed: 42 });
  assert.equal(a.choices[0].message.content, b.choices[0].message.content);
  const others = await Promise.all([1, 2, 3, 4].map((seed) => client.chat.completions.create({ ...body, seed })));
  assert.ok(others.some((o) => o.choices[0].message.content !== a.choices[0].message.content), 'seeds matter');
});

test('logprobs and top_logprobs come from the model', async () => {
  const r = await client.chat.completions.create({ model: 'x', messages: question, max_tokens: 8, logprobs: true, top_logprobs: 3 });
  const content = r.choices[0].logprobs.content;
  assert.equal(content.length, r.usage.completion_tokens);
  for (const entry of content) {
    assert.ok(entry.logprob <= 0);
    assert.equal(entry.top_logprobs.length, 3);
    // greedy: the chosen token is the most likely one
    assert.equal(entry.top_logprobs[0].logprob, entry.logprob);
    for (let i = 1; i < 3; ++i) assert.ok(entry.top_logprobs[i].logprob <= entry.top_logprobs[i - 1].logprob);
  }
  await assert.rejects(client.chat.completions.create({ model: 'x', messages: question, top_logprobs: 30, logprobs: true }), (e) => e.status === 400);
});

test('logit_bias: -100 bans the greedy token (the next most likely comes), +100 makes a token the only one', async () => {
  const body = { model: 'x', messages: question, max_tokens: 1, logprobs: true, top_logprobs: 2 };
  const plain = await client.chat.completions.create(body);
  const [first, second] = plain.choices[0].logprobs.content[0].top_logprobs;
  const tokenize = async (content) => (await (await fetch(`${mini.url}/tokenize`, { method: 'POST', body: JSON.stringify({ content }) })).json()).tokens;
  const ids = await tokenize(first.token);
  assert.equal(ids.length, 1, `the greedy token ${JSON.stringify(first.token)} is one token`);
  const banned = await client.chat.completions.create({ ...body, logit_bias: { [ids[0]]: -100 } });
  assert.equal(banned.choices[0].logprobs.content[0].token, second.token);
  // The log-probabilities stay the model's own (before the bias).
  assert.equal(banned.choices[0].logprobs.content[0].logprob, second.logprob);
  const [and] = await tokenize(' and');
  const forced = await client.chat.completions.create({ model: 'x', messages: question, max_tokens: 5, temperature: 1, seed: 3, logit_bias: { [and]: 100 } });
  assert.equal(forced.choices[0].message.content, ' and'.repeat(5));
});

test('tool_choice that demands a call through a Jinja template: one call in the family\'s format (kimi-mini speaks Kimi K2\'s), never a silent "auto"', async () => {
  const tools = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string', maxLength: 8 } }, required: ['city'] } } }];
  for (const tool_choice of ['required', { type: 'function', function: { name: 'get_weather' } }]) {
    const r = await client.chat.completions.create({ model: 'x', messages: question, tools, tool_choice, max_tokens: 40 });
    assert.equal(r.choices[0].finish_reason, 'tool_calls', JSON.stringify(r.choices[0].message));
    const [call] = r.choices[0].message.tool_calls;
    assert.equal(call.id, 'functions.get_weather:0');
    assert.equal(typeof JSON.parse(call.function.arguments).city, 'string');
  }
  const auto = await client.chat.completions.create({ model: 'x', messages: question, tools, tool_choice: 'auto', max_tokens: 4 });
  assert.equal(auto.choices.length, 1);
});

test('a request that names no sampling gets the model\'s: generation_config.json, else the engine\'s; --temp overrides (issue 41)', async () => {
  // kimi-mini ships no generation_config.json: a copy gets one. A request
  // naming no sampling must draw exactly what the same seed draws with the
  // release's values named (tolerance: none, the sampler is seeded).
  const dir = mkdtempSync(path.join(os.tmpdir(), 'waste-sampling-'));
  const copy = path.join(dir, 'kimi-mini-sampling.waste');
  cpSync(kimiMini, copy, { recursive: true });
  writeFileSync(path.join(copy, 'generation_config.json'), JSON.stringify({ do_sample: true, temperature: 0.7, top_k: 5, top_p: 0.9 }));
  const release = await startServer(copy, ['--model-id', 'sampling'], { modelSampling: true });
  const engine = await startServer(kimiMini, ['--model-id', 'engine-sampling'], { modelSampling: true });
  const flagged = await startServer(copy, ['--model-id', 'flag-sampling', '--temp', '0']);
  try {
    assert.match(release.output(), /temperature 0\.7 \(generation_config\.json\), top_p 0\.9 \(generation_config\.json\), top_k 5 \(generation_config\.json\), min_p 0 \(engine\)/);
    assert.match(engine.output(), /temperature 0\.8 \(engine\), top_p 0\.95 \(engine\), top_k 0 \(engine\)/);
    assert.match(flagged.output(), /temperature 0 \(flag\)/);
    const ask = (server, extra) => new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'none', maxRetries: 0 })
      .chat.completions.create({ model: 'x', messages: question, max_tokens: 24, ...extra });
    for (const seed of [11, 12, 13]) {
      const unnamed = (await ask(release, { seed })).choices[0].message.content;
      const named = (await ask(release, { seed, temperature: 0.7, top_k: 5, top_p: 0.9 })).choices[0].message.content;
      assert.equal(unnamed, named, `seed ${seed}: the release's sampling`);
      const engineUnnamed = (await ask(engine, { seed })).choices[0].message.content;
      const engineNamed = (await ask(engine, { seed, temperature: 0.8, top_p: 0.95 })).choices[0].message.content;
      assert.equal(engineUnnamed, engineNamed, `seed ${seed}: the engine's sampling`);
    }
    // a request's own field wins over the model's, and --temp 0 is greedy
    const greedy = (await ask(release, { temperature: 0 })).choices[0].message.content;
    assert.equal((await ask(flagged, { seed: 11 })).choices[0].message.content, greedy);
    assert.equal((await ask(flagged, {})).choices[0].message.content, greedy);
  } finally {
    for (const server of [release, engine, flagged]) assert.equal((await server.stop()).code, 0);
    rmSync(dir, { recursive: true, force: true });
  }
});

test('every EOS id the model lists ends a reply: generation_config.json\'s too (issue 37)', async () => {
  // A copy of kimi-mini whose generation_config.json adds " and" to the EOS
  // ids (as Qwen3's adds <|endoftext|> to config.json's <|im_end|>); +100 on
  // " and" makes it the only token, so that copy stops at once while the
  // original writes max_tokens of it.
  const tokenize = async (content) => (await (await fetch(`${mini.url}/tokenize`, { method: 'POST', body: JSON.stringify({ content }) })).json()).tokens;
  const [and] = await tokenize(' and');
  const dir = mkdtempSync(path.join(os.tmpdir(), 'waste-eos-'));
  const copy = path.join(dir, 'kimi-mini-eos.waste');
  cpSync(kimiMini, copy, { recursive: true });
  writeFileSync(path.join(copy, 'generation_config.json'), JSON.stringify({ eos_token_id: [and], do_sample: true }));
  const server = await startServer(copy, ['--model-id', 'eos']);
  try {
    const eosClient = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'none', maxRetries: 0 });
    const body = { model: 'x', prompt: 'And God said', max_tokens: 6, temperature: 1, seed: 3, logit_bias: { [and]: 100 } };
    const plain = await client.completions.create(body);
    assert.equal(plain.choices[0].finish_reason, 'length');
    assert.equal(plain.choices[0].text, ' and'.repeat(6));
    const ended = await eosClient.completions.create(body);
    assert.equal(ended.choices[0].finish_reason, 'stop');
    assert.equal(ended.choices[0].text, '', 'the EOS token is not part of the reply');
    assert.equal(ended.usage.completion_tokens, 1);
    const chat = await eosClient.chat.completions.create({ model: 'x', messages: question, max_tokens: 6, temperature: 1, seed: 3, logit_bias: { [and]: 100 } });
    assert.equal(chat.choices[0].finish_reason, 'stop');
    assert.equal(chat.choices[0].message.content ?? '', '', 'nothing before the EOS');
  } finally {
    assert.equal((await server.stop()).code, 0);
    rmSync(dir, { recursive: true, force: true });
  }
});

test('prompt reuse: a state larger than the whole --prompt-cache is not stored and evicts nothing', async () => {
  // kimi-mini's snapshot: ~133 KiB fixed (KDA states, logits) + 320 bytes a
  // token (waste_model_snapshot_bytes). 300 KiB holds a short prompt's state;
  // one of ~700 tokens (~350 KiB) cannot fit even in an empty cache.
  const small = await startServer(kimiMini, ['--model-id', 'x', '--prompt-cache', '300K']);
  try {
    const smallClient = new OpenAI({ baseURL: `${small.url}/v1`, apiKey: 'unused', maxRetries: 0 });
    const ask = (content) => ({ model: 'x', messages: [{ role: 'user', content }], max_tokens: 1, temperature: 0 });
    const short = ask('A short question about the sea.');
    const first = await smallClient.chat.completions.create(short);
    assert.equal(first.waste.prompt_tokens_reused, 0);
    const long = await smallClient.chat.completions.create(ask('word '.repeat(700)));
    assert.ok(long.usage.prompt_tokens >= 700, `${long.usage.prompt_tokens} tokens`);
    // The short prompt's state is still there: its resend prefills nothing.
    const again = await smallClient.chat.completions.create(short);
    assert.equal(again.waste.prompt_tokens_reused, again.usage.prompt_tokens);
  } finally {
    assert.equal((await small.stop()).code, 0);
  }
});

test('prompt reuse: turn 2 resumes from the state after turn 1 (its prompt and reply) and answers as a fresh prefill does', async () => {
  // A second kimi-mini server without a prompt cache gives the fresh
  // answer; both in the exact mode. Tolerance: greedy tokens identical;
  // logprobs within 2e-3. The resumed state evaluated turn 1's reply in
  // decode steps and the fresh server evaluates it in a prefill chunk:
  // within chunking's 1e-3 on each logit (waste_session_set_prefill_chunk),
  // so a logprob (logit - logsumexp) within twice that. (The default int8
  // mode's decode tables and prefill rows are two coarser roundings, whose
  // cost docs/QUALITY.md measures.)
  const cached = await startServer(kimiMini, ['--model-id', 'kimi-mini', '--lut', 'exact']);
  const fresh = await startServer(kimiMini, ['--model-id', 'kimi-mini', '--prompt-cache', '0', '--lut', 'exact']);
  try {
    const client = new OpenAI({ baseURL: `${cached.url}/v1`, apiKey: 'unused', maxRetries: 0 });
    const freshClient = new OpenAI({ baseURL: `${fresh.url}/v1`, apiKey: 'unused', maxRetries: 0 });
    const history = [{ role: 'user', content: 'In the beginning God created the heaven and the earth. And the earth was without form, and void.' }];
    const ask = (messages) => ({ model: 'x', messages, max_tokens: 12, temperature: 0, logprobs: true });
    const turn1 = await client.chat.completions.create(ask(history));
    const messages = [...history, { role: 'assistant', content: turn1.choices[0].message.content }, { role: 'user', content: 'And then?' }];
    const [resumed, baseline] = await Promise.all([client.chat.completions.create(ask(messages)), freshClient.chat.completions.create(ask(messages))]);
    // Turn 1's reply is cut by max_tokens: its last token was drawn, never
    // evaluated, so the state after the reply holds every token before it.
    // Turn 2 renders the reply as generated, so it resumes from that state
    // and prefills only the reply's end and the new message.
    assert.equal(turn1.choices[0].finish_reason, 'length');
    assert.equal(resumed.waste.prompt_tokens_reused, turn1.usage.prompt_tokens + turn1.usage.completion_tokens - 1,
      'turn 2 resumed from the state after turn 1\'s reply');
    assert.ok(resumed.waste.prompt_tokens_reused < resumed.usage.prompt_tokens);
    assert.equal(baseline.waste.prompt_tokens_reused, 0);
    assert.equal(resumed.choices[0].message.content, baseline.choices[0].message.content);
    const a = resumed.choices[0].logprobs.content;
    const b = baseline.choices[0].logprobs.content;
    assert.equal(a.length, b.length);
    for (let i = 0; i < a.length; ++i) {
      assert.equal(a[i].token, b[i].token);
      assert.ok(Math.abs(a[i].logprob - b[i].logprob) <= 2e-3, `token ${i}: ${a[i].logprob} vs ${b[i].logprob}`);
    }
    // The same request again resumes from its own whole prompt: identical.
    const again = await client.chat.completions.create(ask(messages));
    assert.equal(again.waste.prompt_tokens_reused, again.usage.prompt_tokens);
    assert.equal(again.choices[0].message.content, resumed.choices[0].message.content);
  } finally {
    assert.equal((await cached.stop()).code, 0);
    assert.equal((await fresh.stop()).code, 0);
  }
});

test('json_object is accepted', async () => {
  const r = await client.chat.completions.create({ model: 'x', messages: question, max_tokens: 4, response_format: { type: 'json_object' } });
  assert.equal(r.choices[0].message.role, 'assistant');
});

test('completions: a raw prompt, text_completion', async () => {
  const r = await client.completions.create({ model: 'x', prompt: 'And God said', max_tokens: 12, logprobs: 2 });
  assert.equal(r.object, 'text_completion');
  assert.equal(typeof r.choices[0].text, 'string');
  assert.equal(r.choices[0].logprobs.tokens.length, r.usage.completion_tokens);
  const again = await client.completions.create({ model: 'x', prompt: ['And God said'], max_tokens: 12 });
  assert.equal(again.choices[0].text, r.choices[0].text);
});

test('tokenize and detokenize round-trip', async () => {
  const text = 'And God said, Let there be light.';
  const t = await (await fetch(`${mini.url}/tokenize`, { method: 'POST', body: JSON.stringify({ content: text }) })).json();
  assert.ok(t.tokens.length > 0);
  const d = await (await fetch(`${mini.url}/detokenize`, { method: 'POST', body: JSON.stringify({ tokens: t.tokens }) })).json();
  assert.equal(d.content, text);
});

test('keep-alive: two requests on one socket', async () => {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const get = () => new Promise((resolve, reject) => {
    const req = http.get(`${mini.url}/v1/models`, { agent }, (res) => {
      res.resume();
      res.on('end', () => resolve(req.reusedSocket));
    });
    req.on('error', reject);
  });
  assert.equal(await get(), false);
  assert.equal(await get(), true, 'the second request reused the connection');
  agent.destroy();
});

test('K3 container: a tool round trip (call, result, answer)', async () => {
  const tools = [{ type: 'function', function: { name: 'get_weather', description: 'Weather of a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }];
  const messages = [
    { role: 'user', content: 'Weather in Paris?' },
    { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
    { role: 'tool', tool_call_id: 'call_1', content: '{"temp_c": 21}' },
  ];
  const r = await k3client.chat.completions.create({ model: 'x', messages, tools, max_tokens: 16 });
  assert.equal(r.choices[0].message.role, 'assistant');
  assert.ok(['stop', 'length', 'tool_calls'].includes(r.choices[0].finish_reason));
  assert.equal(r.usage.completion_tokens, r.waste.tokens_generated);
  const chunks = await collect(await k3client.chat.completions.create({ model: 'x', messages, tools, max_tokens: 16, stream: true }));
  const reasoning = chunks.map((c) => c.choices[0]?.delta?.reasoning_content ?? '').join('');
  const content = chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('');
  assert.equal(content, r.choices[0].message.content ?? '');
  assert.equal(reasoning, r.choices[0].message.reasoning_content ?? '');
});

test('a request the renderer refuses is a 400 in OpenAI shape', async () => {
  await assert.rejects(client.chat.completions.create({ model: 'x', messages: [] }), (e) => e.status === 400 && e.error?.type === 'invalid_request_error');
  await assert.rejects(client.chat.completions.create({ model: 'x', messages: question, temperature: 3 }), (e) => e.status === 400 && e.param === 'temperature');
});

test('metrics count requests and tokens', async () => {
  const m = await metrics(mini.url);
  assert.ok(m.waste_requests_total > 0);
  assert.ok(m.waste_generated_tokens_total > 0);
  assert.equal(m.waste_queue_depth, 0);
});
