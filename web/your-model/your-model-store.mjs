// Checkpoints downloaded from the hub, kept in the browser's Cache Storage so they open again
// offline. Each file is stored under a same-origin key that is never fetched from the network:
//   …/multihead-models/<id>/<file name>
// and a checkpoint counts as stored only once its "complete" marker is written (a download that
// broke off leaves nothing listed, and is cleaned up).
const CACHE = 'multihead-models';
const PREFIX = '/multihead-models/';
const COMPLETE = '.complete';

const keyOf = (id, name) => new URL(`${PREFIX}${encodeURIComponent(id)}/${encodeURIComponent(name)}`, self.location.origin).href;
const available = () => typeof caches === 'object' && caches !== null;

/** Stores one file from a stream of its bytes; resolves to the bytes stored. */
export async function storeFile(id, name, body, size) {
  const cache = await caches.open(CACHE);
  await cache.put(keyOf(id, name), new Response(body, { headers: { 'Content-Type': 'application/octet-stream', 'X-Size': String(size) } }));
  const stored = await cache.match(keyOf(id, name));
  return (await stored.blob()).size;
}

/** Marks a checkpoint complete, with the list of its files and sizes. */
export async function markComplete(id, files) {
  const cache = await caches.open(CACHE);
  await cache.put(keyOf(id, COMPLETE), new Response(JSON.stringify({ id, files, stored: Date.now() }), { headers: { 'Content-Type': 'application/json' } }));
}

/** The stored checkpoints: [{ id, files: [{ name, size }], bytes }]. */
export async function listStored() {
  if (!available()) return [];
  const cache = await caches.open(CACHE);
  const out = [];
  for (const request of await cache.keys()) {
    if (!request.url.endsWith(`/${COMPLETE}`)) continue;
    const meta = await (await cache.match(request)).json();
    out.push({ ...meta, bytes: meta.files.reduce((sum, f) => sum + f.size, 0) });
  }
  return out.sort((a, b) => a.id.localeCompare(b.id));
}

/** A stored checkpoint's files as name → Blob (read from disk as the loader streams them), or null. */
export async function openStored(id) {
  if (!available()) return null;
  const cache = await caches.open(CACHE);
  const marker = await cache.match(keyOf(id, COMPLETE));
  if (!marker) return null;
  const { files } = await marker.json();
  const out = new Map();
  for (const { name } of files) {
    const response = await cache.match(keyOf(id, name));
    if (!response) return null;
    out.set(name, await response.blob());
  }
  return out;
}

/** Deletes a checkpoint's files (complete or not). */
export async function deleteStored(id) {
  if (!available()) return;
  const cache = await caches.open(CACHE);
  const prefix = new URL(`${PREFIX}${encodeURIComponent(id)}/`, self.location.origin).href;
  for (const request of await cache.keys()) if (request.url.startsWith(prefix)) await cache.delete(request);
}
