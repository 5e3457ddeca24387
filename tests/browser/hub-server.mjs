// Imitates the Hugging Face hub's file URLs for the browser and Node tests, on 127.0.0.1 only:
//   /{id}/resolve/main/{file}   the fixture checkpoints in tests/fixtures/hf/{id}
//   /{id}/resolve/{rev}/{file}  another revision: the fixture tests/fixtures/hf/{rev} (so that a
//                               test can tell which revision it got)
// with the hub's CORS headers and byte ranges, plus two models that go wrong on purpose:
//   broken/…      answers config.json, then HTTP 500 for everything else
//   truncated/…   the gpt2 fixture whose model.safetensors stops halfway (the connection drops)
//   local/GGUF/{name}.gguf   the GGUF fixture tests/fixtures/gguf/{name}/model.gguf (a repository of GGUF files)
// Usage: node tests/browser/hub-server.mjs --port 4181, or startHubServer(port) (0: any free port).
import { createServer } from 'node:http';
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const fixtures = resolve(fileURLToPath(new URL('../fixtures/hf', import.meta.url)));
const ggufFixtures = resolve(fileURLToPath(new URL('../fixtures/gguf', import.meta.url)));
const cors = {
  'Access-Control-Allow-Origin': '*',
  'Access-Control-Allow-Headers': 'Range',
  'Access-Control-Expose-Headers': 'Content-Range, Content-Length, Accept-Ranges',
  'Cross-Origin-Resource-Policy': 'cross-origin',
};

const serve = async (req, res) => {
  if (req.method === 'OPTIONS') { res.writeHead(204, cors); res.end(); return; }
  const m = /^\/([\w.-]+(?:\/[\w.-]+)?)\/resolve\/([\w.-]+)\/([\w.-]+)$/.exec(new URL(req.url, 'http://x').pathname);
  if (!m) { res.writeHead(404, cors); res.end('not found'); return; }
  const [, id, revision, file] = m;
  if (id === 'broken' && file !== 'config.json') { res.writeHead(500, cors); res.end('internal error'); return; }
  const folder = revision !== 'main' ? revision : id === 'broken' || id === 'truncated' ? 'gpt2' : id;
  let body;
  const path = id === 'local/GGUF' ? join(ggufFixtures, file.replace(/\.gguf$/, ''), 'model.gguf') : join(fixtures, folder, file);
  try { body = await readFile(path); } catch { res.writeHead(404, cors); res.end('not found'); return; }
  const headers = { ...cors, 'Accept-Ranges': 'bytes', 'Content-Type': 'application/octet-stream' };
  const range = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range || '');
  if (range) {
    const start = Number(range[1]), end = Math.min(range[2] ? Number(range[2]) : body.length - 1, body.length - 1);
    res.writeHead(206, { ...headers, 'Content-Range': `bytes ${start}-${end}/${body.length}`, 'Content-Length': end - start + 1 });
    res.end(body.subarray(start, end + 1));
    return;
  }
  res.writeHead(200, { ...headers, 'Content-Length': body.length });
  if (id === 'truncated' && file === 'model.safetensors') {
    res.write(body.subarray(0, body.length >> 1));
    setTimeout(() => res.destroy(), 50);  // the connection drops halfway
    return;
  }
  res.end(body);
};

/** Starts the imitation on 127.0.0.1; resolves to { url, close }. */
export function startHubServer(port = 0) {
  return new Promise((done) => {
    const server = createServer(serve).listen(port, '127.0.0.1', () => {
      done({ url: `http://127.0.0.1:${server.address().port}`, close: () => new Promise((r) => server.close(r)) });
    });
  });
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const port = Number(process.argv[process.argv.indexOf('--port') + 1] || 4181);
  startHubServer(port).then(({ url }) => console.log(`hub imitation at ${url}/`));
}
