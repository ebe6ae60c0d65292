// haproxy.test.mjs — deploy/haproxy.cfg, exactly as shipped, in front of two
// `waste serve` instances on kimi-mini, all on loopback; the real `openai`
// client talks only to HAProxy (maxRetries 0: what succeeds, HAProxy made
// succeed). One instance is killed (SIGKILL) while requests are in flight on
// it: those end with an error the client raises (no hang), the ones on the
// other instance complete well-formed, and every request sent after the kill
// succeeds — including those HAProxy first sends to the dead instance before
// its health check notices (retry-on conn-failure: nothing reached it).
//
// A conversation that names itself (X-Conversation-Id) keeps both its turns
// on one instance, whose prompt cache resumes turn 2 from turn 1's reply.
//
// The two instances get different --model-id values only so the test can see
// which one answered (replies carry it; chat requests do not select by it).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import OpenAI from 'openai';
import { startServer, kimiMini, metrics, repo, sanitized } from './server.mjs';

let a;
let b;
let haproxy;
let client;
let lbUrl;

function freePort() {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.on('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });
}

const hostPort = (url) => new URL(url).host;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// Whether nothing listens at url's port any more: a TCP connection is refused.
function refuses(url) {
  return new Promise((resolve) => {
    const { hostname, port } = new URL(url);
    const socket = net.connect(Number(port), hostname);
    socket.once('connect', () => { socket.destroy(); resolve(false); });
    socket.once('error', () => resolve(true));
  });
}

async function waitFor(what, check, timeoutMs = 30000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      if (await check()) return;
    } catch { /* not yet */ }
    await sleep(100);
  }
  throw new Error(`timed out waiting for ${what}`);
}

before(async () => {
  // One slot each and a queue: requests wait on an instance, so some are
  // surely in flight on it when it is killed.
  const args = ['--parallel', '1', '--queue', '16'];
  [a, b] = await Promise.all([startServer(kimiMini, [...args, '--model-id', 'lb-a']), startServer(kimiMini, [...args, '--model-id', 'lb-b'])]);
  const port = await freePort();
  lbUrl = `http://127.0.0.1:${port}`;
  haproxy = spawn('haproxy', ['-db', '-f', path.join(repo, 'deploy', 'haproxy.cfg')], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, WASTE_LB_BIND: `127.0.0.1:${port}`, WASTE_SERVER_1: hostPort(a.url), WASTE_SERVER_2: hostPort(b.url) },
  });
  let log = '';
  haproxy.stdout.on('data', (d) => { log += d; });
  haproxy.stderr.on('data', (d) => { log += d; });
  haproxy.on('exit', (code) => { if (code !== null && code !== 0) console.error(`haproxy exited ${code}:\n${log}`); });
  await waitFor('HAProxy to answer /health', async () => (await fetch(`${lbUrl}/health`)).status === 200);
  client = new OpenAI({ baseURL: `${lbUrl}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 120000 });
});

after(async () => {
  haproxy?.kill('SIGTERM');
  const results = await Promise.all([a?.stop(), b?.stop()]);
  // a was killed by the test; b must stop cleanly.
  if (results[1]) assert.equal(results[1].code, 0);
});

const ask = (i, extra = {}) => ({
  model: 'kimi-mini',
  messages: [{ role: 'user', content: `Tell me a long story about day ${i}` }],
  max_tokens: 64,
  temperature: 0.8,
  seed: i,
  ...extra,
});

// A streamed reply, checked for form: role first, one finish_reason, and the
// model id of the instance that produced it. Throws what the client throws.
async function streamed(i, maxTokens) {
  const stream = await client.chat.completions.create(ask(i, { stream: true, max_tokens: maxTokens }));
  let model;
  let finishes = 0;
  let first = true;
  for await (const chunk of stream) {
    model = chunk.model;
    if (first) assert.equal(chunk.choices[0].delta.role, 'assistant');
    first = false;
    if (chunk.choices.length && chunk.choices[0].finish_reason) ++finishes;
  }
  assert.equal(finishes, 1);
  return model;
}

test('both instances answer through HAProxy', async () => {
  // leastconn: four at once over two one-slot instances spread over both.
  const replies = await Promise.all([0, 1, 2, 3].map((i) => client.chat.completions.create(ask(i))));
  for (const r of replies) assert.ok(['stop', 'length'].includes(r.choices[0].finish_reason));
  assert.deepEqual(new Set(replies.map((r) => r.model)), new Set(['lb-a', 'lb-b']));
});

test('a conversation with an X-Conversation-Id stays on one instance, and its turn 2 resumes from turn 1\'s reply', async () => {
  // Six conversations at once, each two turns. Without the header leastconn
  // spreads the turns (a turn 2 on the other instance reuses nothing); with
  // it, each conversation's hash picks one instance for both turns.
  const conversations = ['a7', 'b3', 'c9', 'd1', 'e5', 'f2'];
  const ask = (history) => ({ model: 'kimi-mini', messages: history, max_tokens: 8, temperature: 0 });
  const results = await Promise.all(conversations.map(async (id) => {
    const headers = { 'X-Conversation-Id': `conversation-${id}` };
    const history = [{ role: 'user', content: `Tell me about conversation ${id}` }];
    const turn1 = await client.chat.completions.create(ask(history), { headers });
    history.push({ role: 'assistant', content: turn1.choices[0].message.content }, { role: 'user', content: 'And then?' });
    const turn2 = await client.chat.completions.create(ask(history), { headers });
    return { turn1, turn2 };
  }));
  for (const { turn1, turn2 } of results) {
    assert.equal(turn2.model, turn1.model, 'both turns on one instance');
    // The instance holds the state after turn 1's reply: every token of it
    // but the last drawn (never evaluated), whether it ended by length or EOS.
    assert.equal(turn2.waste.prompt_tokens_reused, turn1.usage.prompt_tokens + turn1.usage.completion_tokens - 1);
  }
  // The hash spreads these conversations over both instances.
  assert.deepEqual(new Set(results.map((r) => r.turn1.model)), new Set(['lb-a', 'lb-b']));
});

test('an instance killed mid-run: its in-flight requests fail cleanly, all others succeed', async () => {
  // Long answers (kimi-mini may still end early by itself: such a request was
  // simply not in flight at the kill). The sanitizer builds decode several
  // times slower: shorter answers keep their run short and still in flight.
  const answerTokens = sanitized ? 300 : 2000;
  const sent = 6;
  let settled = 0;
  const outcomes = Array.from({ length: sent }, (_, i) => streamed(100 + i, answerTokens)
    .then((model) => ({ model }), (error) => ({ error }))
    .finally(() => { ++settled; }));
  // Kill a while it is generating one request and holding at least one more,
  // and only once every request has reached an instance (or ended): counted
  // before HAProxy had dispatched them all, lb-a could still be handed one
  // more between this count and the kill, and that one would fail too.
  let inFlightOnA = 0;
  await waitFor('every request placed, some in flight on lb-a', async () => {
    const [ma, mb] = await Promise.all([metrics(a.url), metrics(b.url)]);
    const onA = ma.waste_requests_active + ma.waste_queue_depth;
    const onB = mb.waste_requests_active + mb.waste_queue_depth;
    inFlightOnA = onA;
    return ma.waste_requests_active >= 1 && ma.waste_queue_depth >= 1 && onA + onB + settled === sent;
  });
  await a.stop('SIGKILL');
  // Gone means its port refuses connections: at once on Linux; under Wine
  // once wineserver has closed the dead process's listening socket, which
  // until then still accepts (and HAProxy's request there gets no answer).
  await waitFor('lb-a to refuse connections', () => refuses(a.url), 10000);
  // Sent once lb-a is gone, before the health check (1 s, fall 2) can mark
  // it down: HAProxy's connection to it is refused and the request goes to lb-b.
  const after = await Promise.all([200, 201, 202, 203].map((i) => client.chat.completions.create(ask(i))));
  for (const r of after) assert.equal(r.model, 'lb-b');

  const results = await Promise.all(outcomes);
  const failed = results.filter((r) => r.error);
  const completed = results.filter((r) => !r.error);
  // Every failure is a request that was on lb-a, so there are at most as many
  // as lb-a held; every completion came from lb-b (or from lb-a before the
  // kill, for an answer that ended by itself).
  assert.ok(failed.length >= 1, 'no request was cut by the kill');
  assert.ok(failed.length <= inFlightOnA, `${failed.length} failed, lb-a held ${inFlightOnA}`);
  assert.ok(completed.length >= results.length - inFlightOnA);
  for (const r of failed) assert.ok(r.error instanceof Error, String(r.error));
  for (const r of completed) assert.ok(['lb-a', 'lb-b'].includes(r.model));

  const m = await metrics(b.url);
  assert.equal(m.waste_requests_errors_total, 0);
  // And the balancer keeps serving on what is left.
  const later = await client.chat.completions.create(ask(300));
  assert.equal(later.model, 'lb-b');
});
