// server.mjs — starts `waste serve` on a free port for a test and stops it.
// WASTE_CLI names the binary (ctest passes the build's); the server prints
// "ready at http://HOST:PORT/v1" once the model is loaded.
import { spawn } from 'node:child_process';
import OpenAI from 'openai';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const cli = process.env.WASTE_CLI || path.join(repo, 'build', 'release', 'waste');
// The container converted from models/kimi-mini (ctest's serve_convert_kimi_mini
// fixture writes it and passes its path).
export const kimiMini = process.env.WASTE_KIMI_MINI || path.join(repo, 'build', 'release', 'serve-kimi-mini');
export const k3Tiny = path.resolve(repo, '..', 'shared', 'fixtures', 'upstream', 'tiny-tok.waste');
// The sanitizer builds run several times slower: the tests scale their load.
export const sanitized = process.env.WASTE_SANITIZED === '1';
// The Windows build under Wine (scripts/test_windows.sh): Wine ends a
// Windows process at once on SIGTERM, as TerminateProcess would; the stop a
// Windows server is sent is a console Ctrl-C, which Wine delivers for
// SIGINT. `waste.exe serve` runs waste-serve.exe as a child in the same
// console, so the Ctrl-C goes to the server's whole process group, as a
// console's does.
export const underWine = process.env.WASTE_SERVE_UNDER_WINE === '1';

// The server's own process: `waste serve`'s, or under Wine waste-serve.exe's,
// which Wine starts outside its parent's children but in its process group
// (led by the `waste.exe serve` the test spawned, detached).
function serverPid(child) {
  if (!underWine) return child.pid;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const [, , group] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');  // state, ppid, pgrp
      if (Number(group) === child.pid && readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes('waste-serve.exe')) return Number(entry);
    } catch {
      // a process that ended while the folder was read
    }
  }
  throw new Error(`no waste-serve.exe in process group ${child.pid}`);
}

// The tests were written for greedy replies to requests that name no
// temperature: each server gets --temp 0 unless the test names --temp itself
// or asks for the model's own sampling ({ modelSampling: true }).
export async function startServer(model, extraArgs = [], { env = {}, modelSampling = false } = {}) {
  const sampling = modelSampling || extraArgs.includes('--temp') ? [] : ['--temp', '0'];
  const child = spawn(cli, ['serve', model, '--port', '0', ...sampling, ...extraArgs], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
    detached: underWine,
  });
  let out = '';
  let err = '';
  child.stderr.on('data', (d) => { err += d; });
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server not ready in 120 s:\n${out}\n${err}`)), 120000);
    child.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/ready at (http:\/\/[^\s/]+)\/v1/);
      if (m) { clearTimeout(timer); resolve(m[1]); }
    });
    child.on('exit', (code) => { clearTimeout(timer); reject(new Error(`server exited ${code}:\n${out}\n${err}`)); });
  });
  child.removeAllListeners('exit');
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  // Found once (under Wine a scan of /proc), then asked for every RSS sample.
  let serverProcess;
  const pid = () => (serverProcess ??= serverPid(child));
  return {
    url,
    child,
    output: () => out,
    errors: () => err,
    pid,
    rssKiB: () => Number(readFileSync(`/proc/${pid()}/status`, 'utf8').match(/VmRSS:\s+(\d+)/)[1]),
    // SIGTERM: the clean stop (under Wine a console Ctrl-C); SIGKILL: the
    // server killed where it stands (under Wine its whole process group: the
    // `waste.exe serve` the test spawned and the waste-serve.exe that serves).
    async stop(signal = 'SIGTERM') {
      const running = child.exitCode === null && child.signalCode === null;
      if (underWine && signal === 'SIGTERM') {
        if (running) process.kill(-child.pid, 'SIGINT');
      } else if (underWine && signal === 'SIGKILL') {
        if (running) process.kill(-child.pid, 'SIGKILL');
      } else child.kill(signal);
      const result = await exited;
      // A sanitizer's report (ThreadSanitizer exits 66, AddressSanitizer 1)
      // is on the server's stderr: show it beside the failed exit check.
      if (result.code !== 0 && signal === 'SIGTERM') process.stderr.write(`waste serve exited ${result.code}:\n${err}\n`);
      return result;
    },
  };
}

export async function metrics(url) {
  const text = await (await fetch(`${url}/metrics`)).text();
  const values = {};
  for (const line of text.split('\n')) {
    const m = line.match(/^(waste_\w+) (\S+)$/);
    if (m) values[m[1]] = Number(m[2]);
  }
  return values;
}

// Reads an SSE body into its data payloads ("[DONE]" included as a string).
export async function readEvents(response) {
  const text = await response.text();
  return text.split('\n\n').filter((e) => e.length).map((e) => {
    if (!e.startsWith('data: ')) throw new Error(`not an SSE data event: ${JSON.stringify(e)}`);
    const payload = e.slice(6);
    return payload === '[DONE]' ? payload : JSON.parse(payload);
  });
}

// kimi-mini (chat.json) and tiny-tok.waste (XTML) served side by side, with
// an OpenAI client on each (no client retries: what succeeds, the server
// made succeed). stop() ends both and checks SIGTERM's exit 0.
export async function startMiniAndK3() {
  const [mini, k3] = await Promise.all([startServer(kimiMini, ['--model-id', 'kimi-mini']), startServer(k3Tiny, ['--model-id', 'tiny-k3'])]);
  return {
    mini,
    k3,
    client: new OpenAI({ baseURL: `${mini.url}/v1`, apiKey: 'unused', maxRetries: 0 }),
    k3client: new OpenAI({ baseURL: `${k3.url}/v1`, apiKey: 'unused', maxRetries: 0 }),
    async stop() {
      return Promise.all([mini.stop(), k3.stop()]);
    },
  };
}
