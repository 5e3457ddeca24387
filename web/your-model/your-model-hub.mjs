// Checkpoints from the Hugging Face hub (or any server with the same layout) for the page: the
// library resolves a model id or URL and lists the files with their sizes (shown before anything
// large is fetched); this file downloads them into the browser's storage, with progress and cancel.
// Which files a model id or URL means, their sizes, and fetching them are the library's
// (bindings/hub.mjs).
import { request } from '../../bindings/hub.mjs';
import { deleteStored, markComplete, storeFile } from './your-model-store.mjs';

export { resolveSource, listCheckpointFiles as planDownload } from '../../bindings/hub.mjs';

/**
 * Downloads the planned files into the browser's storage under `id`. onProgress({ loaded, total,
 * bytesPerSecond, secondsLeft, file }). On an error or cancel the partial files are deleted.
 */
export async function download(id, plan, { onProgress = () => {}, signal } = {}) {
  const started = performance.now();
  let loaded = 0;
  const stored = [];
  try {
    for (const file of plan.files) {
      const response = await request(new URL(encodeURIComponent(file.name), plan.base).href, { signal });
      if (!response.ok) throw new Error(`${file.name}: the server answered HTTP ${response.status}`);
      const counter = new TransformStream({
        transform(chunk, controller) {
          loaded += chunk.length;
          const seconds = (performance.now() - started) / 1000;
          const bytesPerSecond = seconds > 0 ? loaded / seconds : 0;
          onProgress({ loaded, total: plan.total, bytesPerSecond, secondsLeft: bytesPerSecond > 0 ? (plan.total - loaded) / bytesPerSecond : Infinity, file: file.name });
          controller.enqueue(chunk);
        },
      });
      let size;
      try {
        size = await storeFile(id, file.name, response.body.pipeThrough(counter, { signal }), file.size);
      } catch (error) {
        if (signal?.aborted) throw Object.assign(new Error('multihead: cancelled'), { name: 'AbortError' });
        throw new Error(`the download of ${file.name} broke off (${error.message}): try again`);
      }
      if (file.size > 0 && size !== file.size) {
        throw new Error(`${file.name} arrived with ${size} of its ${file.size} bytes: the download was truncated; try again`);
      }
      stored.push({ name: file.name, size });
    }
    await markComplete(id, stored);
    return stored;
  } catch (error) {
    await deleteStored(id);
    throw error;
  }
}
