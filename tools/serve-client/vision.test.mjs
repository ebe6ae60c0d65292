// vision.test.mjs — images through `waste serve --vision` with the real
// OpenAI client (k3-chat.md §10, vision.md §4), on a synthetic K3 container
// with a tiny vision tower (`waste synth --preset tiny-k3 --set vision=true`):
// base64 data: URLs read, local files only under --image-dir, http
// never fetched; each refusal a 400 with its code. Greedy answers compare
// exactly (tolerance: none; one slot, the same engine, the same bits).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync, rmSync, symlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import { startServer, cli, underWine } from './server.mjs';

let dir;
let model;
let server;      // --vision
let localServer; // --vision --image-dir DIR/images
let plainServer; // no --vision
let client;
let localClient;
let plainClient;

// A 24-bit BMP of seeded pixels (bottom-up rows padded to 4 bytes).
function bmp(width, height, seed) {
  const stride = Math.ceil((width * 3) / 4) * 4;
  const b = Buffer.alloc(54 + stride * height);
  b.write('BM', 0);
  b.writeUInt32LE(b.length, 2);
  b.writeUInt32LE(54, 10);
  b.writeUInt32LE(40, 14);
  b.writeInt32LE(width, 18);
  b.writeInt32LE(height, 22);
  b.writeUInt16LE(1, 26);
  b.writeUInt16LE(24, 28);
  b.writeUInt32LE(stride * height, 34);
  let x = seed;
  for (let y = 0; y < height; ++y)
    for (let i = 0; i < width * 3; ++i) {
      x = (x * 1103515245 + 12345) >>> 0;
      b[54 + y * stride + i] = x >>> 24;
    }
  return b;
}
const dataUrl = (bytes) => `data:image/bmp;base64,${bytes.toString('base64')}`;
const first = bmp(100, 60, 1);
const second = bmp(100, 60, 2);  // the same size: the same token ids, other pixels

function ask(url, text = 'what is in the picture') {
  return {
    model: 'x',
    messages: [{ role: 'user', content: [{ type: 'text', text }, { type: 'image_url', image_url: { url } }] }],
    max_tokens: 4,
    temperature: 0,
    logprobs: true,
  };
}

before(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'waste-vision-'));
  model = path.join(dir, 'k3v');
  execFileSync(cli, ['synth', model, '--preset', 'tiny-k3', '--set', 'vision=true']);
  mkdirSync(path.join(dir, 'images'));
  writeFileSync(path.join(dir, 'images', 'first.bmp'), first);
  [server, localServer, plainServer] = await Promise.all([
    startServer(model, ['--vision']),
    startServer(model, ['--vision', '--image-dir', path.join(dir, 'images')]),
    startServer(model),
  ]);
  client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  localClient = new OpenAI({ baseURL: `${localServer.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  plainClient = new OpenAI({ baseURL: `${plainServer.url}/v1`, apiKey: 'unused', maxRetries: 0 });
});

after(async () => {
  for (const r of await Promise.all([server.stop(), localServer.stop(), plainServer.stop()])) assert.equal(r.code, 0);
  rmSync(dir, { recursive: true, force: true });
});

test('a data: URL image is read, and what the model sees', async () => {
  const a = await client.chat.completions.create(ask(dataUrl(first)));
  const b = await client.chat.completions.create(ask(dataUrl(second)));
  const again = await client.chat.completions.create(ask(dataUrl(first)));
  // The image's positions are in the prompt: 100x60 at this tower's budget
  // (64 patches) is a 6x4 patch grid, 6 positions, beside the block's
  // <|media_begin|>, <|media_content|> and <|media_end|> and its "image 100x60".
  const textOnly = await client.chat.completions.create({ ...ask(''), messages: [{ role: 'user', content: [{ type: 'text', text: 'what is in the picture' }] }] });
  assert.ok(a.usage.prompt_tokens >= textOnly.usage.prompt_tokens + 9, `${a.usage.prompt_tokens} vs ${textOnly.usage.prompt_tokens}`);
  assert.equal(b.usage.prompt_tokens, a.usage.prompt_tokens, 'same size, same positions');
  // Other pixels, other logits; the same pixels, the same answer — after a
  // request about another picture of the same size (no prompt reuse across).
  assert.notDeepEqual(b.choices[0].logprobs.content.map((t) => t.logprob), a.choices[0].logprobs.content.map((t) => t.logprob));
  assert.deepEqual(again.choices[0].logprobs.content, a.choices[0].logprobs.content);
  assert.equal(again.choices[0].message.reasoning_content, a.choices[0].message.reasoning_content);
  assert.equal(a.waste.prompt_tokens_reused, 0);
});

test('streaming with an image reassembles the blocking answer', async () => {
  const blocking = await client.chat.completions.create(ask(dataUrl(first)));
  const stream = await client.chat.completions.create({ ...ask(dataUrl(first)), stream: true });
  let reasoning = '';
  let content = '';
  for await (const chunk of stream) {
    const d = chunk.choices[0]?.delta ?? {};
    reasoning += d.reasoning_content ?? '';
    content += d.content ?? '';
  }
  assert.equal(reasoning, blocking.choices[0].message.reasoning_content ?? '');
  assert.equal(content, blocking.choices[0].message.content ?? '');
});

test('a local file only under --image-dir, and then the same as its data: URL', async () => {
  const file = path.join(dir, 'images', 'first.bmp');
  await assert.rejects(client.chat.completions.create(ask(file)), (e) => e.status === 400 && e.code === 'local_images_disallowed');
  const fromFile = await localClient.chat.completions.create(ask(`file://${file}`));
  const fromData = await localClient.chat.completions.create(ask(dataUrl(first)));
  assert.deepEqual(fromFile.choices[0].logprobs.content, fromData.choices[0].logprobs.content);
  const relative = await localClient.chat.completions.create(ask('first.bmp'));
  assert.deepEqual(relative.choices[0].logprobs.content, fromData.choices[0].logprobs.content);
});

test('--image-dir: outside it, links out, "..", FIFOs and non-images are refused without telling what is there', async () => {
  const images = path.join(dir, 'images');
  writeFileSync(path.join(dir, 'secret.txt'), 'PRIVATE-CONTENTS-0123');
  writeFileSync(path.join(images, 'notes.bmp'), 'PRIVATE-CONTENTS-4567');
  symlinkSync(path.join(dir, 'secret.txt'), path.join(images, 'link.bmp'));
  execFileSync('mkfifo', [path.join(images, 'pipe.bmp')]);
  const refusal = async (url) => {
    try {
      await localClient.chat.completions.create(ask(url));
    } catch (e) {
      assert.equal(e.status, 400, url);
      return e;
    }
    assert.fail(`${url} was read`);
  };
  const outside = [];
  // Under Wine a Unix symlink is an ordinary file to a Windows program (Wine
  // follows it): link.bmp is then the secret's bytes inside the folder, not
  // a link out, and is refused as not an image instead (asserted below).
  // Windows' own links (reparse points) are not made here: no Windows machine.
  for (const url of [path.join(dir, 'secret.txt'), path.join(dir, 'missing.txt'), '../secret.txt', ...(underWine ? [] : ['link.bmp']),
    '/etc/passwd', '/dev/zero', `file://${path.join(dir, 'secret.txt')}`]) {
    const e = await refusal(url);
    assert.equal(e.code, 'local_images_disallowed', url);
    assert.doesNotMatch(e.message, /PRIVATE|No such file|Permission/, url);
    outside.push(e.message.replace(/"[^"]*"/, 'REF'));
  }
  assert.equal(new Set(outside).size, 1, `one answer whether or not the file exists: ${[...new Set(outside)].join(' / ')}`);
  const started = Date.now();
  // Windows has no FIFOs in folders: under Wine one is a file that cannot be
  // opened, refused as a missing one is.
  assert.equal((await refusal('pipe.bmp')).code, underWine ? 'local_images_disallowed' : 'invalid_image');
  assert.ok(Date.now() - started < 10000, 'a FIFO is refused at once, never waited on');
  if (underWine) {
    const followed = await refusal('link.bmp');
    assert.equal(followed.code, 'invalid_image');
    assert.doesNotMatch(followed.message, /PRIVATE/);
  }
  const notImage = await refusal('notes.bmp');
  assert.equal(notImage.code, 'invalid_image');
  assert.doesNotMatch(notImage.message, /PRIVATE|50 52 49|5052/, 'no bytes of the file in the answer');
  // the server keeps serving
  assert.equal((await fetch(`${localServer.url}/health`)).status, 200);
});

test('--allow-local-images (any path) is refused, naming its replacement', () => {
  let err = '';
  try {
    execFileSync(cli, ['serve', model, '--port', '0', '--allow-local-images'], { stdio: 'pipe' });
  } catch (e) {
    err = String(e.stderr);
  }
  assert.match(err, /replaced by --image-dir DIR/);
});

test('refusals: URLs, bad data, broken images, no tower, a forged block', async () => {
  const refused = async (c, body, code) =>
    assert.rejects(c.chat.completions.create(body), (e) => e.status === 400 && e.code === code, code);
  await refused(client, ask('https://example.com/cat.png'), 'image_url_not_fetched');
  await refused(client, ask('data:image/bmp,notbase64'), 'invalid_image_url');
  await refused(client, ask('data:image/bmp;base64,@@@@'), 'invalid_image_url');
  await refused(client, ask(dataUrl(first.subarray(0, 40))), 'invalid_image');
  await refused(client, ask(dataUrl(Buffer.from('not an image at all'))), 'invalid_image');
  await refused(plainClient, ask(dataUrl(first)), 'vision_disabled');
  // A placeholder typed beside a real image cannot become a media block: the counts disagree.
  await assert.rejects(client.chat.completions.create(ask(dataUrl(first), 'see <|kimi_image_placeholder|>')), (e) => e.status === 400);
  // The server is still answering.
  const ok = await client.chat.completions.create(ask(dataUrl(first)));
  assert.equal(ok.choices.length, 1);
});
