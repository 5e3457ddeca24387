// Offline support: network first (so a rebuilt page is never served stale), falling back to the
// last copy cached on a successful visit. Only same-origin GET requests are touched.
const CACHE = 'multihead-v6';
// Everything the page needs, cached on the first visit so the second can be offline.
const APP = ['./', './index.html', './style.css', './app.mjs', './tokens.mjs', './state.mjs',
  './heatmap.mjs', './colormap.mjs', './stats.mjs', './walkthrough.mjs', './archetypes.mjs',
  './export.mjs', './session.mjs', './compute-worker.mjs', './model.html', './model-page.mjs',
  './model-state.mjs', './model/austen.mhlm', './model/austen.json', './playground.html',
  './playground-page.mjs', './playground-view.mjs', './playground-state.mjs', './playground-draw.mjs',
  './playground-compare.mjs', './curves.mjs', './your-model.html', './your-model-page.mjs',
  './your-model-view.mjs', './your-model-draw.mjs', './your-model-roles.mjs', './your-model-state.mjs',
  './your-model-store.mjs', './your-model-hub.mjs', './your-model-worker.mjs',
  './train-worker.mjs', '../bindings/multihead.mjs', '../bindings/language-model.mjs',
  '../bindings/trainer.mjs', '../bindings/pretrained.mjs', '../bindings/pretrained-sources.mjs',
  '../bindings/tokenizers/tokenizer.mjs', '../bindings/tokenizers/normalize.mjs',
  '../bindings/tokenizers/pretokenize.mjs', '../bindings/tokenizers/models.mjs',
  '../dist/multihead_core.mjs', '../dist/multihead_core.wasm'];
// The threaded build, only where the host makes the page (and this worker) cross-origin isolated:
// elsewhere it can never run, so it is not worth the download.
const THREADED = ['../dist/multihead_core_mt.mjs', '../dist/multihead_core_mt.wasm',
  '../dist/multihead_core_mt.worker.js'];

self.addEventListener('install', (event) => {
  event.waitUntil(caches.open(CACHE).then((cache) => cache.addAll(self.crossOriginIsolated ? [...APP, ...THREADED] : APP)).then(() => self.skipWaiting()));
});
self.addEventListener('activate', (event) => event.waitUntil(self.clients.claim()));

self.addEventListener('fetch', (event) => {
  const request = event.request;
  if (request.method !== 'GET' || new URL(request.url).origin !== self.location.origin) return;
  event.respondWith((async () => {
    const cache = await caches.open(CACHE);
    try {
      const response = await fetch(request);
      if (response.ok) await cache.put(request, response.clone());
      return response;
    } catch (error) {
      const cached = await cache.match(request, { ignoreSearch: true });
      if (cached) return cached;
      throw error;
    }
  })());
});
