// Frees a wasm object (an Embind handle) when the JS object that owns it is garbage-collected
// without dispose(): one FinalizationRegistry for every class of the API.
const registry = typeof FinalizationRegistry === 'function'
  ? new FinalizationRegistry((handle) => { if (!handle.isDeleted()) handle.delete(); })
  : null;

/** From now on, `handle` is deleted when `owner` is collected. */
export function track(owner, handle) {
  registry?.register(owner, handle, owner);
}

/** owner.dispose(): deletes `handle` now and stops tracking it. */
export function release(owner, handle) {
  registry?.unregister(owner);
  handle.delete();
}
