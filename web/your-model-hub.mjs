// Checkpoints from the Hugging Face hub (or any server with the same layout): a model id or URL →
// the files to download and their sizes (asked for first, shown before anything large is
// fetched), then the download itself into the browser's storage, with progress and cancel.
import { deleteStored, markComplete, storeFile } from './your-model-store.mjs';

export const HUB = 'https://huggingface.co';
const ID = /^[A-Za-z0-9][\w.-]*(\/[\w.-]+)?$/;

/** "gpt2", "Qwen/Qwen2.5-0.5B", a URL of a checkpoint folder, or a path on this site → its base URL (ending in '/'). */
export function resolveSource(text) {
  const input = String(text).trim();
  if (/^https?:\/\//i.test(input)) return input.endsWith('/') ? input : `${input}/`;
  if (/^\.{0,2}\//.test(input)) return new URL(input.endsWith('/') ? input : `${input}/`, self.location.href).href;  // this site's own folder
  if (ID.test(input)) return `${HUB}/${input}/resolve/main/`;
  throw new Error(`“${input.slice(0, 60)}” is neither a Hugging Face model id (like gpt2 or Qwen/Qwen2.5-0.5B) nor a URL`);
}

async function request(url, init) {
  let response;
  try {
    response = await fetch(url, init);
  } catch (error) {
    if (init?.signal?.aborted) throw Object.assign(new Error('cancelled'), { name: 'AbortError' });
    throw new Error(`could not reach ${new URL(url).host} (${error.message}): check the connection; a server that does not allow other sites to read its files (CORS) fails the same way`);
  }
  return response;
}

// The size of a file, from a one-byte range request; 0 if the server does not have it.
async function sizeOf(base, name, signal) {
  const response = await request(new URL(name, base).href, { headers: { Range: 'bytes=0-0' }, signal });
  if (response.status === 404) { await response.body?.cancel(); return 0; }
  if (!response.ok) throw new Error(`${name}: the server answered HTTP ${response.status}`);
  const range = response.headers.get('Content-Range');
  const size = range ? Number(range.split('/')[1]) : Number(response.headers.get('Content-Length'));
  await response.body?.cancel().catch(() => {});
  return Number.isFinite(size) && size > 0 ? size : -1;  // -1: exists, size unknown
}

/**
 * What a download would fetch: [{ name, size }] and the total. Reads config.json (to check it is
 * a checkpoint) and asks the sizes of the weight and tokenizer files.
 */
export async function planDownload(base, { signal } = {}) {
  const config = await request(new URL('config.json', base).href, { signal });
  if (config.status === 404 || config.status === 401 || config.status === 403) {
    throw new Error(`there is no config.json at ${base}: check the model id (private and gated models cannot be downloaded here)`);
  }
  if (!config.ok) throw new Error(`config.json: the server answered HTTP ${config.status}`);
  const configText = await config.text();
  const files = [{ name: 'config.json', size: configText.length }];
  const weights = await sizeOf(base, 'model.safetensors', signal);
  if (weights !== 0) {
    files.push({ name: 'model.safetensors', size: weights });
  } else {
    const index = await request(new URL('model.safetensors.index.json', base).href, { signal });
    if (!index.ok) throw new Error('this checkpoint has no model.safetensors (nor an index of shards): only safetensors weights can be read');
    const text = await index.text();
    files.push({ name: 'model.safetensors.index.json', size: text.length });
    let shards;
    try { shards = [...new Set(Object.values(JSON.parse(text).weight_map))]; } catch { throw new Error('model.safetensors.index.json is not valid'); }
    for (const shard of shards) files.push({ name: shard, size: await sizeOf(base, shard, signal) });
  }
  for (const group of [['tokenizer.json'], ['vocab.json', 'merges.txt'], ['vocab.txt']]) {
    const sizes = [];
    for (const name of group) sizes.push(await sizeOf(base, name, signal));
    if (sizes.every((s) => s !== 0)) {
      group.forEach((name, i) => files.push({ name, size: sizes[i] }));
      break;
    }
  }
  const tokenizerConfig = await sizeOf(base, 'tokenizer_config.json', signal);
  if (tokenizerConfig !== 0) files.push({ name: 'tokenizer_config.json', size: tokenizerConfig });
  return { base, files, total: files.reduce((sum, f) => sum + Math.max(0, f.size), 0) };
}

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
      const response = await request(new URL(file.name, plan.base).href, { signal });
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
        if (signal?.aborted) throw Object.assign(new Error('cancelled'), { name: 'AbortError' });
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
