// load.test.mjs — 64 concurrent streaming clients on kimi-mini for a
// bounded time: every stream complete and well-formed (role first, one
// finish_reason, [DONE] last), 0 errors, RSS flat. And a client that aborts
// mid-stream: its generation stops within a token (checked via /metrics).
// The disconnect cases generate one token over and over (logit_bias +100)
// up to 16,000 tokens: a reply that ended by itself first (kimi-mini
// writes ~1,400 tokens a second here, and a sampled reply of a few hundred
// ended before a loaded machine's client could hang up) would leave
// nothing to cut.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, kimiMini, metrics, readEvents, sanitized } from './server.mjs';

const clients = 64;
// Release: 20 s of load; the sanitizer builds (several times slower) 6 s.
const seconds = Number(process.env.WASTE_LOAD_SECONDS || (sanitized ? 6 : 20));

const longReply = 16000;
let server;
let repeated;  // logit_bias making one token the only choice
before(async () => {
  // The default --max-connections (parallel + queue + 8 = 76): node's fetch
  // pool keeps more connections open than it has requests in flight (76
  // for 64 clients, measured with ss), and idle kept-alive ones must not
  // count against the cap (http_connections.h). A prompt cache of 4 MiB:
  // each request stores its prompt's and its reply's state (~0.2 MiB each
  // here), so the warm-up round fills it and the load runs it full, evicting;
  // the default 64 MiB would still be filling during the load, RSS growing
  // by design up to its reserve, hiding what the check looks for.
  server = await startServer(kimiMini, ['--parallel', '4', '--queue', '64', '--ctx', '16384', '--max-tokens', String(longReply),
    '--prompt-cache', '4M']);
  const { tokens } = await (await fetch(`${server.url}/tokenize`, { method: 'POST', body: JSON.stringify({ content: ' and' }) })).json();
  repeated = { [tokens[0]]: 100 };
});
after(async () => {
  const r = await server.stop();
  assert.equal(r.code, 0);
});

async function oneStream(i) {
  const response = await fetch(`${server.url}/v1/chat/completions`, {
    method: 'POST',
    body: JSON.stringify({ messages: [{ role: 'user', content: `Tell me about day ${i % 7}` }], max_tokens: 16, stream: true, temperature: 0.8, seed: i }),
  });
  if (response.status !== 200) assert.fail(`stream ${i}: ${response.status} ${await response.text()}`);
  const events = await readEvents(response);
  assert.equal(events.at(-1), '[DONE]');
  assert.deepEqual(events[0].choices[0].delta, { role: 'assistant', content: '' });
  const finishes = events.filter((e) => e !== '[DONE]' && e.choices.length && e.choices[0].finish_reason);
  assert.equal(finishes.length, 1);
  assert.ok(events.some((e) => e !== '[DONE]' && e.waste));
  for (const e of events) if (e !== '[DONE]') assert.ok(!e.error, JSON.stringify(e));
}

test(`${clients} concurrent streaming clients: complete, well-formed, 0 errors, RSS flat`, async () => {
  // One round first: caches and pools reach their working size.
  await Promise.all(Array.from({ length: clients }, (_, i) => oneStream(i)));
  const warm = server.rssKiB();
  const deadline = Date.now() + seconds * 1000;
  let completed = 0;
  let peak = warm;
  // Cleared whatever happens: a live interval would keep node running after
  // a failure (the test then timed out at 900 s instead of failing).
  const sampler = setInterval(() => { peak = Math.max(peak, server.rssKiB()); }, 200);
  try {
    await Promise.all(Array.from({ length: clients }, async (_, i) => {
      while (Date.now() < deadline) { await oneStream(i + completed); ++completed; }
    }));
  } finally {
    clearInterval(sampler);
  }
  const m = await metrics(server.url);
  assert.equal(m.waste_requests_errors_total, 0);
  assert.equal(m.waste_requests_rejected_total, 0);
  assert.equal(m.waste_queue_depth, 0);
  assert.equal(m.waste_requests_active, 0);
  // Tolerance: 10% + 16 MiB over the warm RSS (allocator slack and thread
  // stacks touched late); a per-request leak over hundreds of streams would
  // grow without bound and cross it.
  // Not under the sanitizers: ASan keeps freed blocks in its quarantine (up
  // to 256 MB), so its RSS grows without a leak; LeakSanitizer checks the
  // server at exit there instead (the project's other RSS checks skip too).
  if (!sanitized) assert.ok(peak <= warm * 1.1 + 16384, `RSS grew from ${warm} KiB to ${peak} KiB over ${completed} streams`);
  assert.ok(completed >= clients, `${completed} streams completed`);
});

test('concurrent greedy streams decode in batches and answer as each does alone', async () => {
  // Four prompts, each first alone (its decode steps are batches of one:
  // the decode path) and then all four at once (batched: each expert read
  // once for all the streams that chose it), on a server of its own in the
  // exact mode. A batch rounds as a prefill chunk does, not as the decode
  // path's lookup tables (waste.h, waste_session_eval_batch): within 1e-3 on
  // each logit in the exact mode, so a token's logprob (logit minus
  // logsumexp) within 2e-3. The check: the same tokens up to any position
  // where the lone run's top two choices are within 0.01 nats (a near tie
  // the two roundings may order either way; after one, the texts may part),
  // each chosen token's logprob within 2e-3 up to there. (The int8 mode's
  // decode tables and prefill rows are two coarser roundings; its batch is
  // held to the chunk path's bits in batch_step_test.)
  const exact = await startServer(kimiMini, ['--parallel', '4', '--lut', 'exact']);
  try {
    const ask = (i) => ({
      model: 'x', messages: [{ role: 'user', content: `Write about the ${['sea', 'hills', 'city', 'desert'][i]}.` }],
      max_tokens: 24, temperature: 0, logprobs: true, top_logprobs: 2,
    });
    const post = async (body) => (await fetch(`${exact.url}/v1/chat/completions`, { method: 'POST', body: JSON.stringify(body) })).json();
    const alone = [];
    for (let i = 0; i < 4; ++i) alone.push(await post(ask(i)));
    // Four requests sent at once overlap in the server only if each arrives
    // before the others end, which the client cannot force: under Wine a
    // new connection's accept has taken longer than a whole 24-token reply.
    // So up to four rounds, until one was batched; every round's answers are
    // checked. A round after the first sends on the four connections the
    // one before kept alive. A server that never batches fails all four.
    let batched = false;
    const seen = [];
    for (let round = 0; round < 4 && !batched; ++round) {
      const before = await metrics(exact.url);
      const together = await Promise.all([0, 1, 2, 3].map((i) => post(ask(i))));
      const after = await metrics(exact.url);
      const batches = after.waste_decode_batches_total - before.waste_decode_batches_total;
      const rows = after.waste_decode_batch_rows_total - before.waste_decode_batch_rows_total;
      seen.push(`${rows} steps in ${batches} batches`);
      batched = rows > batches;
      for (let i = 0; i < 4; ++i) {
        const a = alone[i].choices[0].logprobs.content;
        const b = together[i].choices[0].logprobs.content;
        for (let t = 0; t < Math.min(a.length, b.length); ++t) {
          const margin = a[t].top_logprobs.length > 1 ? a[t].top_logprobs[0].logprob - a[t].top_logprobs[1].logprob : Infinity;
          if (margin < 0.01) break;
          assert.equal(b[t].token, a[t].token, `round ${round}, prompt ${i}, token ${t}`);
          assert.ok(Math.abs(b[t].logprob - a[t].logprob) <= 2e-3, `round ${round}, prompt ${i}, token ${t}: ${b[t].logprob} vs ${a[t].logprob}`);
        }
      }
    }
    assert.ok(batched, `${seen.join(', ')}: the streams were never batched`);
  } finally {
    assert.equal((await exact.stop()).code, 0);
  }
});

// The metrics once the server has counted one more disconnect and freed
// every slot (polled for up to 10 s), checked for exactly that.
async function afterOneDisconnect(before) {
  let after;
  for (let i = 0; i < 100; ++i) {
    after = await metrics(server.url);
    if (after.waste_client_disconnects_total > before.waste_client_disconnects_total && after.waste_requests_active === 0) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.equal(after.waste_client_disconnects_total, before.waste_client_disconnects_total + 1);
  assert.equal(after.waste_requests_active, 0, 'the slot is free');
  return after;
}

test('a client that aborts mid-stream stops its generation within a token', async () => {
  const before = await metrics(server.url);
  const controller = new AbortController();
  const response = await fetch(`${server.url}/v1/chat/completions`, {
    method: 'POST',
    signal: controller.signal,
    body: JSON.stringify({ messages: [{ role: 'user', content: 'Count to a thousand.' }], max_tokens: longReply, stream: true, temperature: 1, seed: 7, logit_bias: repeated }),
  });
  const reader = response.body.getReader();
  let received = 0;
  let text = '';
  while (received < 5) {
    const { value, done } = await reader.read();
    assert.ok(!done, 'the stream went on');
    text += Buffer.from(value).toString();
    received = (text.match(/"delta"/g) || []).length - 1;
  }
  controller.abort();
  const after = await afterOneDisconnect(before);
  const generated = after.waste_generated_tokens_total - before.waste_generated_tokens_total;
  const sent = after.waste_stream_tokens_sent_total - before.waste_stream_tokens_sent_total;
  // Tolerance 1: the server checks for the client's hang-up before writing
  // each token, so at most the token under way when the close arrived is
  // generated and not sent. A loop that ignored the close would run on to
  // max_tokens.
  assert.ok(generated - sent <= 1, `generated ${generated} tokens, ${sent} reached the socket`);
  assert.ok(generated < longReply, `the generation stopped early (${generated} tokens)`);
  assert.ok(sent >= received);
});

test('a client that abandons a blocking request frees its slot within a token', async () => {
  const before = await metrics(server.url);
  const controller = new AbortController();
  const request = fetch(`${server.url}/v1/chat/completions`, {
    method: 'POST',
    signal: controller.signal,
    body: JSON.stringify({ messages: [{ role: 'user', content: 'Count to a thousand.' }], max_tokens: longReply, temperature: 1, seed: 8, logit_bias: repeated }),
  }).catch((e) => e);
  // Abort once it is generating (a slot active and tokens counted).
  let generating = false;
  for (let i = 0; i < 200 && !generating; ++i) {
    const m = await metrics(server.url);
    generating = m.waste_requests_active >= 1 && m.waste_generated_tokens_total > before.waste_generated_tokens_total;
    if (!generating) await new Promise((r) => setTimeout(r, 25));
  }
  assert.ok(generating, 'the request was generating within 5 s');
  controller.abort();
  assert.equal((await request).name, 'AbortError');
  const after = await afterOneDisconnect(before);
  assert.equal(after.waste_requests_completed_total, before.waste_requests_completed_total, 'an abandoned request is not an answer');
  const generated = after.waste_generated_tokens_total - before.waste_generated_tokens_total;
  // Without the hang-up check a blocking generation ran to max_tokens with
  // nobody to read it; with it, it stops at the next token.
  assert.ok(generated < longReply, `the generation stopped early (${generated} tokens)`);
});
