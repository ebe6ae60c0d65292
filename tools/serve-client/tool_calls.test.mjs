// tool_calls.test.mjs — tool_choice that demands a call, held in each Jinja
// family's own call format (docs/SERVE.md "Structured output"), through the
// real OpenAI client: kimi-mini dressed as Qwen3 (Hermes JSON), Kimi K2,
// DeepSeek V3.1, GLM-4.6 (key/value tags) and gpt-oss (harmony), with each
// release's chat template (families.mjs). K3's XTML calls are
// constrained.test.mjs's. The weights are noise, so the checks are about
// form: every reply is one call of a declared tool whose arguments validate
// against its parameters (Ajv, the project's independent validator),
// whatever the seed and temperature; tolerance: none.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import OpenAI from 'openai';
import { startServer } from './server.mjs';
import { families, familyContainer } from './families.mjs';
import { weather, clock } from './call_tools.mjs';

const require = createRequire(new URL('../json-schema-validator/package.json', import.meta.url));
const Ajv2020 = require('ajv/dist/2020');
const ajv = new Ajv2020({ strict: false });

const seeds = [1, 2, 3, 4];
const temperatures = [0, 1];
const messages = [{ role: 'user', content: 'What is the weather in Paris?' }];

const servers = {};
before(async () => {
  for (const name of Object.keys(families)) {
    const { dir, ids } = familyContainer(name);
    const server = await startServer(dir, ['--model-id', name]);
    servers[name] = { server, ids, client: new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'none', maxRetries: 0 }) };
  }
});

after(async () => {
  for (const { server } of Object.values(servers)) assert.equal((await server.stop()).code, 0, 'SIGTERM ends the server with exit 0');
});

function checkCall(r, tools, family) {
  assert.equal(r.choices[0].finish_reason, 'tool_calls', `${family}: ${JSON.stringify(r.choices[0].message)}`);
  const calls = r.choices[0].message.tool_calls;
  assert.equal(calls.length, 1, family);
  const tool = tools.find((t) => t.function.name === calls[0].function.name);
  assert.ok(tool, `${family}: a declared tool: ${calls[0].function.name}`);
  const validate = ajv.compile(tool.function.parameters);
  const args = JSON.parse(calls[0].function.arguments);
  assert.ok(validate(args), `${family}: ${calls[0].function.arguments} ${JSON.stringify(validate.errors)}`);
  assert.equal(r.choices[0].message.content, null, `${family}: a demanded call has no answer text`);
  return calls[0];
}

test('tool_choice naming a function: one call in the family\'s format whose arguments validate (blocking and streaming)', async () => {
  for (const [family, { client }] of Object.entries(servers)) {
    for (const temperature of temperatures) {
      for (const seed of seeds.slice(0, 2)) {
        const body = { model: 'x', messages, tools: [weather, clock], tool_choice: { type: 'function', function: { name: 'get_weather' } }, max_tokens: 400, temperature, seed };
        const call = checkCall(await client.chat.completions.create(body), [weather], family);
        assert.equal(call.function.name, 'get_weather');
        const chunks = [];
        for await (const chunk of await client.chat.completions.create({ ...body, stream: true })) chunks.push(chunk);
        const streamed = chunks.flatMap((c) => c.choices[0]?.delta?.tool_calls ?? []);
        assert.equal(streamed.find((c) => c.function?.name)?.function.name, 'get_weather', family);
        assert.equal(streamed.map((c) => c.function?.arguments ?? '').join(''), call.function.arguments, family);
        assert.equal(chunks.map((c) => c.choices[0]?.finish_reason).find(Boolean), 'tool_calls', family);
      }
    }
  }
});

test('tool_choice "required": the model picks a declared tool under a grammar of their names, its arguments validate', async () => {
  for (const [family, { client }] of Object.entries(servers)) {
    const picked = new Set();
    for (const temperature of temperatures) {
      for (const seed of seeds) {
        const r = await client.chat.completions.create({ model: 'x', messages, tools: [weather, clock], tool_choice: 'required', max_tokens: 400, temperature, seed });
        picked.add(checkCall(r, [weather, clock], family).function.name);
      }
    }
    assert.ok(picked.size >= 1, family);
  }
});

test('the call reads back as the family writes it: its id in K2\'s form, the call the template renders next turn', async () => {
  const { client } = servers['kimi-k2'];
  const r = await client.chat.completions.create({ model: 'x', messages, tools: [weather], tool_choice: 'required', max_tokens: 400 });
  assert.equal(checkCall(r, [weather], 'kimi-k2').id, 'functions.get_weather:0');
  // The call goes back into the next turn: every family's template accepts
  // it and the conversation goes on. (Content "" for null: Qwen3's template
  // tests `'</think>' in message.content`, which Jinja2 refuses for null.)
  for (const [family, { client: other }] of Object.entries(servers)) {
    const first = await other.chat.completions.create({ model: 'x', messages, tools: [weather], tool_choice: 'required', max_tokens: 400 });
    const call = checkCall(first, [weather], family);
    const next = await other.chat.completions.create({
      model: 'x', tools: [weather], max_tokens: 4,
      messages: [...messages, { ...first.choices[0].message, content: '' }, { role: 'tool', tool_call_id: call.id, content: 'sunny' }],
    });
    assert.ok(next.usage.prompt_tokens > first.usage.prompt_tokens, family);
  }
});

test('with reasoning left open by the prompt (DeepSeek V3.1 thinking): think is free, then the call is held', async () => {
  // The noise model rarely writes </think> by itself: a bias makes it
  // likely, as a model that has thought enough would.
  const { client, ids } = servers.deepseek;
  const end = ids['</think>'];
  let called = 0;
  for (const seed of seeds) {
    const r = await client.chat.completions.create({
      model: 'x', messages, tools: [weather], tool_choice: 'required', max_tokens: 500, temperature: 1, seed,
      logit_bias: { [end]: 8 }, chat_template_kwargs: { thinking: true },
    });
    if (r.choices[0].finish_reason === 'length') continue;
    assert.ok(r.choices[0].message.reasoning_content?.length > 0, `it thought first: ${JSON.stringify(r.choices[0].message)}`);
    checkCall(r, [weather], 'deepseek');
    ++called;
  }
  assert.ok(called >= 1, 'some replies left think and called');
});

test('what a family\'s format cannot hold exactly is a 400 naming tool_choice', async () => {
  const refused = async (family, tools, pattern) => {
    await assert.rejects(servers[family].client.chat.completions.create({ model: 'x', messages, tools, tool_choice: 'required', max_tokens: 4 }),
      (e) => e.status === 400 && e.param === 'tool_choice' && pattern.test(e.message), `${family}: ${pattern}`);
  };
  const spaced = { type: 'function', function: { name: 'get weather', description: 'x', parameters: { type: 'object', properties: {} } } };
  for (const family of Object.keys(servers)) await refused(family, [spaced], /function name "get weather"/);
  // GLM writes a string bare and reads a value back as JSON where it parses:
  // a pattern cannot be held there, nor an enum value that is JSON.
  const patterned = { type: 'function', function: { name: 'f', description: 'x', parameters: { type: 'object', properties: { a: { type: 'string', pattern: '^a+$' } } } } };
  await refused('glm', [patterned], /keyword 'pattern'/);
  const numeric = { type: 'function', function: { name: 'f', description: 'x', parameters: { type: 'object', properties: { a: { enum: ['12', 'x'] } } } } };
  await refused('glm', [numeric], /"12" would not read back/);
  // The same schemas are held in the JSON families (the arguments are JSON there).
  const r = await servers.qwen3.client.chat.completions.create({ model: 'x', messages, tools: [numeric], tool_choice: 'required', max_tokens: 40 });
  assert.ok(['12', 'x'].includes(JSON.parse(checkCall(r, [numeric], 'qwen3').function.arguments).a ?? 'x'));
});
