// A small static file server for the demo page and the browser tests (no dependencies).
// Serves the repository root on 127.0.0.1; "/" opens the page in web/.
// Usage: node scripts/serve.mjs [--port 8080] [--no-isolation]
//   By default it sends the two headers that make the pages cross-origin isolated, which the
//   threaded build needs (SharedArrayBuffer): COOP same-origin and COEP require-corp.
//   --no-isolation  sends neither, as a static host that cannot set headers does (GitHub Pages):
//                   the pages' service worker then isolates them (web/common/service-worker.mjs).
//   (--isolated, the default, is still accepted.)
import { createServer } from 'node:http';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import { extname, join, normalize, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(fileURLToPath(new URL('..', import.meta.url)));
const portArg = process.argv.indexOf('--port');
const port = portArg > 0 ? Number(process.argv[portArg + 1]) : Number(process.env.PORT || 8080);
const isolating = !process.argv.includes('--no-isolation');
const isolationHeaders = isolating
  ? { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' } : {};
const types = {
  '.html': 'text/html; charset=utf-8', '.mjs': 'text/javascript; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8',
  '.wasm': 'application/wasm', '.json': 'application/json', '.svg': 'image/svg+xml',
  '.png': 'image/png', '.webmanifest': 'application/manifest+json', '.txt': 'text/plain; charset=utf-8',
};

createServer(async (req, res) => {
  try {
    const path = decodeURIComponent(new URL(req.url, 'http://localhost').pathname);
    if (path === '/') {  // a redirect, not the file, so the page's relative URLs resolve under /web/
      res.writeHead(302, { Location: '/web/index.html' });
      res.end();
      return;
    }
    let file = normalize(join(root, path));
    if (file !== root && !file.startsWith(root + sep)) throw Object.assign(new Error('outside'), { code: 'ENOENT' });
    if ((await stat(file)).isDirectory()) file = join(file, 'index.html');
    // Streamed from the file, only the bytes asked for: a multi-GB model read by ranges would
    // otherwise be read whole for each range (and over 2 GiB cannot be read into one buffer).
    const { size } = await stat(file);
    const headers = {
      'Content-Type': types[extname(file)] || 'application/octet-stream', 'Cache-Control': 'no-cache',
      'Accept-Ranges': 'bytes', ...isolationHeaders,
    };
    // Byte ranges, as the Hugging Face hub serves them (a checkpoint's header is read first).
    const range = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range || '');
    if (range) {
      const start = Number(range[1]), end = Math.min(range[2] ? Number(range[2]) : size - 1, size - 1);
      if (start >= size || end < start) {
        res.writeHead(416, { 'Content-Range': `bytes */${size}` });
        res.end();
        return;
      }
      res.writeHead(206, { ...headers, 'Content-Length': end - start + 1, 'Content-Range': `bytes ${start}-${end}/${size}` });
      await pipeline(createReadStream(file, { start, end, highWaterMark: 1 << 20 }), res);
      return;
    }
    res.writeHead(200, { ...headers, 'Content-Length': size });
    await pipeline(createReadStream(file, { highWaterMark: 1 << 20 }), res);
  } catch {
    if (res.headersSent) { res.destroy(); return; }  // the client went away mid-file
    res.writeHead(404, { 'Content-Type': 'text/plain' });
    res.end('not found');
  }
}).listen(port, '127.0.0.1', () => {
  console.log(`multihead: serving ${root} at http://127.0.0.1:${port}/ (the page is web/index.html)` +
    (isolating ? ', cross-origin isolated (threads on)' : ', without isolation headers (the service worker adds them)'));
});
