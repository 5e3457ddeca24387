// Offline support: network first (so a rebuilt page is never served stale), falling back to the
// last copy cached on a successful visit. Only same-origin GET requests are touched.
// Everything the pages need, cached on the first visit so that the second can be offline: the list
// and its version are generated from the pages' imports (scripts/precache.mjs, run by the build).
importScripts('./precache.js');
const CACHE = `multihead-app-${self.PRECACHE_VERSION}`;  // not multihead-models: the stored checkpoints
const APP = self.PRECACHE;
// The builds this browser will load (bindings/multihead.mjs picks the same way): relaxed SIMD where
// the engine validates it, and the threaded one only where the host makes the page (and this
// worker) cross-origin isolated — elsewhere it can never run, so it is not worth the download.
function builds() {
  const zero = [0xfd, 0x0c, ...new Array(16).fill(0)];
  const body = [0, ...zero, ...zero, ...zero, 0xfd, 0x85, 0x02, 0x0b];
  let relaxed = false;
  try {
    relaxed = WebAssembly.validate(new Uint8Array([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0, 1, 5, 1, 0x60, 0, 1, 0x7b,
      3, 2, 1, 0, 0x0a, body.length + 2, 1, body.length, ...body]));
  } catch { /* no relaxed SIMD */ }
  const suffix = relaxed ? '_relaxed' : '';
  const files = [`../dist/multihead_core${suffix}.mjs`, `../dist/multihead_core${suffix}.wasm`];
  if (self.crossOriginIsolated) {
    files.push(`../dist/multihead_core_mt${suffix}.mjs`, `../dist/multihead_core_mt${suffix}.wasm`,
      `../dist/multihead_core_mt${suffix}.worker.js`);
  }
  return files;
}

self.addEventListener('install', (event) => {
  event.waitUntil(caches.open(CACHE).then((cache) => cache.addAll([...APP, ...builds()])).then(() => self.skipWaiting()));
});
// A new version's cache replaces the older ones (the pages' files only; checkpoints stay).
self.addEventListener('activate', (event) => event.waitUntil((async () => {
  for (const name of await caches.keys()) if ((name.startsWith('multihead-app-') || /^multihead-v\d+$/.test(name)) && name !== CACHE) await caches.delete(name);
  await self.clients.claim();
})()));

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
      return response;
    } catch (error) {
      const cached = await cache.match(request, { ignoreSearch: true });
      if (cached) return cached;
      throw error;
    }
  })());
});
