// raw_http.mjs — raw-socket HTTP for the hostile tests: bytes no client
// library would send, and what the server answered before it closed.
import assert from 'node:assert/strict';
import net from 'node:net';

// Sends bytes to host:port; resolves with everything the server sent
// before it closed (or before `idleMs` of silence), and whether it closed.
export function raw(host, port, bytes, { idleMs = 3000, endWrite = false } = {}) {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, host);
    let data = Buffer.alloc(0);
    let closed = false;
    let timer = setTimeout(() => finish(), idleMs);
    const finish = () => { clearTimeout(timer); socket.destroy(); resolve({ text: data.toString('latin1'), closed }); };
    socket.on('data', (d) => { data = Buffer.concat([data, d]); clearTimeout(timer); timer = setTimeout(finish, idleMs); });
    socket.on('end', () => { closed = true; finish(); });
    socket.on('error', (e) => { if (e.code === 'ECONNRESET' || e.code === 'EPIPE') { closed = true; finish(); } else reject(e); });
    socket.write(bytes);
    if (endWrite) socket.end();
  });
}

export function parseResponse(text) {
  const [head, ...rest] = text.split('\r\n\r\n');
  const status = Number(head.split(' ')[1]);
  let body = rest.join('\r\n\r\n');
  if (/transfer-encoding: chunked/i.test(head)) body = body.replace(/^[0-9a-f]+\r\n/i, '').replace(/\r\n0\r\n\r\n$/, '');
  return { status, head, body };
}

// The response's status is `status` and its body OpenAI's error object;
// returns the error.
export function assertOpenAIError(response, status) {
  const r = parseResponse(response.text);
  assert.equal(r.status, status, response.text.slice(0, 300));
  const error = JSON.parse(r.body).error;
  assert.equal(typeof error.message, 'string');
  assert.ok(error.message.length > 0);
  assert.equal(typeof error.type, 'string');
  assert.ok('param' in error && 'code' in error);
  return error;
}
