// bench_turns.mjs — what prompt reuse buys a conversation's next turn: the
// time to the first streamed token of turn 2, after a turn 1 whose reply is
// --reply tokens long, on a server with its prompt cache (the default) and
// on one without (--prompt-cache 0), both on the same model, the same
// messages, one request at a time. Prints one JSON object: each run's
// times and token counts, and the medians.
//
//   node tools/serve-client/bench_turns.mjs MODEL [--reply 300] [--runs 3] [--threads 2]
//
// Each run opens a new conversation (its first message names the run), so
// turn 1 is never a cache hit; turn 1 runs on the caching server and its
// reply is the history both servers get for turn 2. Greedy decoding.
import OpenAI from 'openai';
import { startServer } from './server.mjs';

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const at = args.indexOf(name);
  return at >= 0 ? args[at + 1] : fallback;
};
const model = args[0];
if (!model || model.startsWith('--')) {
  console.error('usage: node bench_turns.mjs MODEL [--reply N] [--runs R] [--threads T]');
  process.exit(2);
}
const replyTokens = Number(option('--reply', '300'));
const runs = Number(option('--runs', '3'));
const threads = option('--threads', '2');

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

// Milliseconds to the first streamed token (the first chunk that carries a
// token's logprob: the role chunk before it carries none, and a token's
// text may be empty), and the response's usage.
async function firstToken(client, messages) {
  const started = performance.now();
  const stream = await client.chat.completions.create({
    model: 'x', messages, max_tokens: 1, temperature: 0, logprobs: true, stream: true, stream_options: { include_usage: true },
  });
  let ms;
  let usage;
  for await (const chunk of stream) {
    if (ms === undefined && chunk.choices.length && chunk.choices[0].logprobs?.content?.length) ms = performance.now() - started;
    if (chunk.usage) usage = chunk.usage;
  }
  if (ms === undefined) throw new Error('the stream carried no token');
  return { ms, usage };
}

const common = ['--threads', threads, '--model-id', 'x'];
const [cached, fresh] = [await startServer(model, common), await startServer(model, [...common, '--prompt-cache', '0'])];
try {
  const cachedClient = new OpenAI({ baseURL: `${cached.url}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 3600000 });
  const freshClient = new OpenAI({ baseURL: `${fresh.url}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 3600000 });
  const results = [];
  for (let run = 0; run < runs; ++run) {
    const history = [{ role: 'user', content: `Conversation ${run}: tell me a long story about the sea, the wind and a lighthouse keeper.` }];
    const turn1 = await cachedClient.chat.completions.create({ model: 'x', messages: history, max_tokens: replyTokens, temperature: 0 });
    history.push({ role: 'assistant', content: turn1.choices[0].message.content ?? '' }, { role: 'user', content: 'And what happened next?' });
    // Alternate which server goes first, so neither always finds the disk warmer.
    const order = run % 2 ? [['fresh', freshClient], ['reused', cachedClient]] : [['reused', cachedClient], ['fresh', freshClient]];
    const row = { run, turn1_prompt_tokens: turn1.usage.prompt_tokens, turn1_reply_tokens: turn1.usage.completion_tokens };
    for (const [name, client] of order) {
      const { ms, usage } = await firstToken(client, history);
      row[`${name}_first_token_ms`] = ms;
      row[`${name}_prompt_tokens`] = usage?.prompt_tokens;
      row[`${name}_cached_tokens`] = usage?.prompt_tokens_details?.cached_tokens;
    }
    results.push(row);
    console.error(JSON.stringify(row));
  }
  const fresh_ms = median(results.map((r) => r.fresh_first_token_ms));
  const reused_ms = median(results.map((r) => r.reused_first_token_ms));
  console.log(JSON.stringify({
    model, reply_tokens: replyTokens, runs, threads: Number(threads),
    fresh_first_token_ms: fresh_ms, reused_first_token_ms: reused_ms, speedup: fresh_ms / reused_ms, results,
  }, null, 1));
} finally {
  await Promise.all([cached.stop(), fresh.stop()]);
}
