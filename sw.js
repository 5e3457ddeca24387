// Offline support: network first (so a rebuilt page is never served stale), falling back to the
// last copy cached on a successful visit; and cross-origin isolation (isolated() below). Only
// same-origin GET requests are touched.
// It sits at the site's root, not in web/, so that its scope reaches dist/ too: a worker is
// matched by its own URL, and the threaded build's workers (dist/…worker.js) must be served with
// the isolation headers as well, or an isolated page cannot start them.
// Everything the pages need, cached on the first visit so that the second can be offline: the list
// (relative to web/) and its version are generated from the pages' imports (scripts/precache.mjs,
// run by the build).
importScripts('./web/precache.js');
const CACHE = `multihead-app-${self.PRECACHE_VERSION}`;  // not multihead-models: the stored checkpoints
const WEB = new URL('./web/', self.location);
const APP = self.PRECACHE.map((path) => new URL(path, WEB).href);
// The builds this browser will load (bindings/multihead.mjs picks the same way): relaxed SIMD where
// the engine validates it; the threaded one too, since a page this worker serves is cross-origin
// isolated (isolated() below), and the single-thread one for where a browser still refuses threads.
function builds() {
  const zero = [0xfd, 0x0c, ...new Array(16).fill(0)];
  const body = [0, ...zero, ...zero, ...zero, 0xfd, 0x85, 0x02, 0x0b];
  let relaxed = false;
  try {
    relaxed = WebAssembly.validate(new Uint8Array([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0, 1, 5, 1, 0x60, 0, 1, 0x7b,
      3, 2, 1, 0, 0x0a, body.length + 2, 1, body.length, ...body]));
  } catch { /* no relaxed SIMD */ }
  const suffix = relaxed ? '_relaxed' : '';
  return [`./dist/multihead_core${suffix}.mjs`, `./dist/multihead_core${suffix}.wasm`,
    `./dist/multihead_core_mt${suffix}.mjs`, `./dist/multihead_core_mt${suffix}.wasm`,
    `./dist/multihead_core_mt${suffix}.worker.js`];
}

self.addEventListener('install', (event) => {
  event.waitUntil(caches.open(CACHE).then((cache) => cache.addAll([...APP, ...builds()])).then(() => self.skipWaiting()));
});
// A new version's cache replaces the older ones (the pages' files only; checkpoints stay).
self.addEventListener('activate', (event) => event.waitUntil((async () => {
  for (const name of await caches.keys()) if ((name.startsWith('multihead-app-') || /^multihead-v\d+$/.test(name)) && name !== CACHE) await caches.delete(name);
  await self.clients.claim();
})()));

// Cross-origin isolation for hosts that cannot send headers (the technique of coi-serviceworker):
// every response this worker serves carries COOP and COEP, so a page it serves is isolated and may
// use SharedArrayBuffer (the threaded build). Hub downloads are CORS requests, which COEP allows;
// the few requests left to the network (byte ranges, weights) are subresources, which need no
// headers. A host's own headers, where it sends them, are kept.
function isolated(response) {
  if (response.status === 0 || response.headers.has('cross-origin-embedder-policy')) return response;
  const headers = new Headers(response.headers);
  headers.set('Cross-Origin-Opener-Policy', 'same-origin');
  headers.set('Cross-Origin-Embedder-Policy', 'require-corp');
  headers.set('Cross-Origin-Resource-Policy', 'same-origin');
  return new Response(response.body, { status: response.status, statusText: response.statusText, headers });
}

self.addEventListener('fetch', (event) => {
  const request = event.request;
  if (request.method !== 'GET' || new URL(request.url).origin !== self.location.origin) return;
  // Byte ranges (a checkpoint's header, read before its size is shown) go to the network untouched:
  // Cache Storage cannot hold a partial response, and a model's weights have a store of their own.
  if (request.headers.has('range') || /\.(safetensors|bin|gguf|onnx)$/.test(new URL(request.url).pathname)) return;
  event.respondWith((async () => {
    const cache = await caches.open(CACHE);
    try {
      const response = await fetch(request);
      if (response.status === 200) await cache.put(request, response.clone()).catch(() => {});
      return isolated(response);
    } catch (error) {
      const cached = await cache.match(request, { ignoreSearch: true });
      if (cached) return isolated(cached);
      throw error;
    }
  })());
});
