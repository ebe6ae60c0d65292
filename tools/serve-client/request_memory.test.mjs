// request_memory.test.mjs — what requests may hold outside the model's plan
// is bounded (cli/serve/request_memory.h): tokenize bombs, big bodies at
// once and JSON that expands when parsed are answered 200, 413 or 503 —
// never an unbounded allocation — and the server's resident memory stays
// within what it had loaded plus its --request-memory.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { startServer, kimiMini, cli, metrics, sanitized } from './server.mjs';
import { raw, assertOpenAIError } from './raw_http.mjs';

let server;
let loadedKiB;

// The pool is max((1 + 4) x 8 MiB, 32 x 4 MiB) = 128 MiB.
const maxBody = 4 << 20;
const pool = 128 << 20;

before(async () => {
  server = await startServer(kimiMini, ['--queue', '4', '--max-body', '4M']);
  loadedKiB = server.rssKiB();
});

after(async () => {
  const r = await server.stop();
  assert.equal(r.code, 0);
});

const peakKiB = () => Number(readFileSync(`/proc/${server.pid()}/status`, 'utf8').match(/VmHWM:\s+(\d+)/)[1]);

async function post(path, body) {
  const r = await fetch(`${server.url}${path}`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body });
  const text = await r.text();
  return { status: r.status, body: text.length < 100000 ? JSON.parse(text) : { tokens: { length: -1 } }, bytes: text.length };
}

// English-like words, `bytes` long.
function words(bytes) {
  const list = ['stream', 'expert', 'budget', 'cache', 'token', 'layer', 'router', 'weights', 'read', 'the'];
  let s = '';
  for (let i = 0; s.length < bytes; i++) s += list[(i * 7 + (i >> 3)) % list.length] + ' ';
  return s.slice(0, bytes);
}

test('the start line and `waste plan --parallel --queue` show the same request memory', async () => {
  assert.match(server.output(), /request memory\s+128\.00 MiB \(1 slot \+ 4 queued; bodies up to 4\.00 MiB\)/);
  assert.match(server.output(), /ready at .*request memory 128\.00 MiB, 13 connections/);
  const plan = spawnSync(cli, ['plan', kimiMini, '--parallel', '1', '--queue', '4', '--max-body', '4M', '--json'], { encoding: 'utf8' });
  assert.equal(plan.status, 0, plan.stderr);
  const server_ = JSON.parse(plan.stdout).server;
  assert.equal(server_.request_memory_bytes, pool);
  assert.equal(server_.max_body_bytes, maxBody);
  assert.equal(server_.ceiling_bytes, JSON.parse(plan.stdout).budget_bytes + pool);
});

test('tokenize bombs at once: each 200 with every token, or 413/503 before the memory is taken', async () => {
  const content = words(3500000);
  const body = JSON.stringify({ content, with_pieces: true });
  const answers = await Promise.all(Array.from({ length: 6 }, () => post('/tokenize', body)));
  for (const a of answers) {
    assert.ok([200, 413, 503].includes(a.status), JSON.stringify(a.body).slice(0, 300));
    if (a.status === 413) assert.equal(a.body.error.code, 'request_too_large');
    if (a.status === 503) assert.match(a.body.error.code, /^(server_busy)$/);
  }
  // One request that could never fit: a token a byte (random characters),
  // each answered with its piece, is more than the whole pool.
  let random = '';
  for (let i = 0; random.length < 1200000; i++) random += String.fromCodePoint(0x4e00 + ((i * 7919) % 20000));
  const tooLarge = await post('/tokenize', JSON.stringify({ content: random, with_pieces: true }));
  assert.equal(tooLarge.status, 413, JSON.stringify(tooLarge.body));
  assert.equal(tooLarge.body.error.code, 'request_too_large');
  assert.match(tooLarge.body.error.message, /--request-memory 128\.0 MiB/);
  // The same text without pieces fits alone: every token comes back.
  const alone = await post('/tokenize', JSON.stringify({ content: content.slice(0, 1000000) }));
  assert.equal(alone.status, 200);
  const m = await metrics(server.url);
  assert.ok(m.waste_request_memory_peak_bytes <= pool, JSON.stringify(m));
  assert.equal(m.waste_request_memory_bytes, 0, 'every reservation was given back');
});

test('big bodies at once: answered 200/400/413/503; resident memory within the plan', async () => {
  // A chat of 1 MB of text renders at ~64 MB: one at a time fits the pool.
  const chat = JSON.stringify({ messages: [{ role: 'user', content: words(1 << 20) }], max_tokens: 1 });
  const expanding = `{"content": "x", "padding": [${'0,'.repeat((maxBody - 64) / 2 - 1)}0]}`;
  assert.ok(Buffer.byteLength(chat) <= maxBody && expanding.length <= maxBody);
  const answers = await Promise.all([
    ...Array.from({ length: 4 }, () => post('/v1/chat/completions', chat)),
    ...Array.from({ length: 4 }, () => post('/tokenize', expanding)),
  ]);
  for (const a of answers) assert.ok([200, 400, 413, 503].includes(a.status), `${a.status} ${JSON.stringify(a.body).slice(0, 300)}`);
  // Tolerance: the pool, plus 64 MiB for what the plan does not count here
  // (thread stacks touched, allocator slack, the kernel's socket buffers
  // are not resident memory of the process). Release only: under ASan the
  // quarantine and shadow memory are resident memory the server never
  // allocated (677 MB grew there), so the sanitized run checks the
  // reservations alone.
  const grewKiB = peakKiB() - loadedKiB;
  if (!sanitized) assert.ok(grewKiB * 1024 <= pool + (64 << 20), `grew ${grewKiB} KiB; pool ${pool >> 10} KiB`);
  // A request's reservation is returned after its answer is written (the
  // connection's loop drops it), so a client that has its answer can read
  // /metrics a moment before that: wait up to 5 s for every byte to come
  // back (a loaded 2-core machine once read 113 MB still held).
  let m = await metrics(server.url);
  for (const start = Date.now(); m.waste_request_memory_bytes !== 0 && Date.now() - start < 5000;) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    m = await metrics(server.url);
  }
  assert.ok(m.waste_request_memory_peak_bytes <= pool);
  assert.equal(m.waste_request_memory_bytes, 0);
  assert.equal((await post('/tokenize', JSON.stringify({ content: 'still serving' }))).status, 200);
});

test('a Content-Length over --max-body: 413 naming the flag, before the body is read', async () => {
  const u = new URL(server.url);
  const r = await raw(u.hostname, Number(u.port), `POST /tokenize HTTP/1.1\r\nHost: x\r\nContent-Length: ${maxBody + 1}\r\n\r\n{"content":`);
  const error = assertOpenAIError(r, 413);
  assert.equal(error.code, 'payload_too_large');
  assert.match(error.message, /--max-body/);
  assert.ok(r.closed);
});

test('--max-body that --request-memory cannot read is refused at start', async () => {
  const r = spawnSync(cli, ['serve', kimiMini, '--port', '0', '--max-body', '64M', '--request-memory', '32M'], { encoding: 'utf8', timeout: 20000 });
  assert.equal(r.status, 1, r.stderr);
  assert.match(r.stderr, /--max-body 64\.00 MiB needs 64\.25 MiB of request memory to be read, more than --request-memory 32\.00 MiB/);
});
