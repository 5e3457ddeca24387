// Checkpoints on the Hugging Face hub (or any server with its layout): a model id → the base URL
// of its files, and what loading it would download, with every size, before anything large is
// fetched. Nothing here runs unless a caller names a hub id or a URL.
import { fail } from './checks.mjs';

export const HUB = 'https://huggingface.co';
const HUB_ID = /^[A-Za-z0-9][\w.-]*(\/[\w.-]+)?$/;

/** True for "gpt2" or "Qwen/Qwen2.5-0.5B": a hub id, not a URL or a path ("./x", "/x", "C:\x"). */
export function isHubId(text) {
  return typeof text === 'string' && HUB_ID.test(text) && !text.includes('..');
}

/** The base URL (ending in '/') of a hub model's files at a revision (branch, tag or commit). */
export function hubUrl(id, { revision = 'main', hub = HUB } = {}) {
  if (!isHubId(id)) fail(`"${String(id).slice(0, 60)}" is not a Hugging Face model id (like gpt2 or Qwen/Qwen2.5-0.5B)`);
  if (typeof revision !== 'string' || !revision || /[\s?#]/.test(revision)) fail(`revision must be a branch, tag or commit name, got ${JSON.stringify(revision)}`);
  if (typeof hub !== 'string' || !/^https?:\/\/[^\s/]+/i.test(hub)) fail(`hub must be the http(s) address of a server with the hub's layout, got ${JSON.stringify(hub)}`);
  return `${hub.replace(/\/+$/, '')}/${id}/resolve/${encodeURIComponent(revision)}/`;
}

/**
 * "gpt2", "Qwen/Qwen2.5-0.5B", a URL of a checkpoint folder, or a path on this site ("./x", "/x")
 * → its base URL (ending in '/'). base resolves site paths (default: the page's location).
 * A GGUF file — a hub id followed by its file name ("Qwen/Qwen2.5-0.5B-Instruct-GGUF/x-q4_k_m.gguf"),
 * or a URL or path ending in .gguf — gives the file's own URL.
 */
export function resolveSource(text, { revision, hub, base = globalThis.location?.href } = {}) {
  const input = String(text).trim();
  const ggufOfHub = /^([A-Za-z0-9][\w.-]*\/[\w.-]+)\/([^/?#]+\.gguf)$/i.exec(input);
  if (ggufOfHub && !/^https?:/i.test(input) && isHubId(ggufOfHub[1])) return hubUrl(ggufOfHub[1], { revision, hub }) + encodeURIComponent(ggufOfHub[2]);
  if (/\.gguf$/i.test(input)) {
    if (/^https?:\/\//i.test(input)) return input;
    if (/^\.{0,2}\//.test(input)) return new URL(input, base).href;
  }
  if (/^https?:\/\//i.test(input)) return input.endsWith('/') ? input : `${input}/`;
  if (/^\.{0,2}\//.test(input)) return new URL(input.endsWith('/') ? input : `${input}/`, base).href;
  if (isHubId(input)) return hubUrl(input, { revision, hub });
  return fail(`"${input.slice(0, 60)}" is neither a Hugging Face model id (like gpt2 or Qwen/Qwen2.5-0.5B) nor a URL`);
}

/** fetch(), with a failure to connect (or CORS) said in words, and a cancel as an AbortError. */
export async function request(url, init) {
  try {
    return await fetch(url, init);
  } catch (error) {
    if (init?.signal?.aborted) throw Object.assign(new Error('multihead: cancelled'), { name: 'AbortError' });
    return fail(`could not reach ${new URL(url).host} (${error.message}): check the connection; a server that does not allow other sites to read its files (CORS) fails the same way`);
  }
}

// The size of a file, from a one-byte range request; 0 if the server does not have it, -1 if it
// has it but says no size.
async function sizeOf(base, name, signal) {
  const response = await request(new URL(name, base).href, { headers: { Range: 'bytes=0-0' }, signal });
  if (response.status === 404) { await response.body?.cancel(); return 0; }
  if (!response.ok) fail(`${name}: the server answered HTTP ${response.status}`);
  const range = response.headers.get('Content-Range');
  const size = range ? Number(range.split('/')[1]) : Number(response.headers.get('Content-Length'));
  await response.body?.cancel().catch(() => {});
  return Number.isFinite(size) && size > 0 ? size : -1;
}

/**
 * What loading a checkpoint at a base URL (resolveSource's) would download: { base, files:
 * [{ name, size }], total } (size −1: the server gave none). A GGUF file's URL: that one file. Reads config.json, to check that it
 * is a checkpoint, then asks the sizes of the weights (model.safetensors or the shards its index
 * names) and of the tokenizer files, one small range request each.
 */
export async function listCheckpointFiles(base, { signal } = {}) {
  if (/\.gguf$/i.test(new URL(base).pathname)) {  // one GGUF file: the whole model
    const name = decodeURIComponent(new URL(base).pathname.split('/').pop());
    const folder = new URL('./', base).href;
    const size = await sizeOf(folder, encodeURIComponent(name), signal);
    if (size === 0) fail(`there is no ${name} at ${folder}: check the file name (a hub model page lists its files)`);
    return { base: folder, files: [{ name, size }], total: Math.max(0, size) };
  }
  const config = await request(new URL('config.json', base).href, { signal });
  if (config.status === 404 || config.status === 401 || config.status === 403) {
    fail(`there is no config.json at ${base}: check the model id (private and gated models cannot be downloaded here)`);
  }
  if (!config.ok) fail(`config.json: the server answered HTTP ${config.status}`);
  const configText = await config.text();
  const files = [{ name: 'config.json', size: new TextEncoder().encode(configText).length }];
  const weights = await sizeOf(base, 'model.safetensors', signal);
  if (weights !== 0) {
    files.push({ name: 'model.safetensors', size: weights });
  } else {
    const index = await request(new URL('model.safetensors.index.json', base).href, { signal });
    if (!index.ok) fail('this checkpoint has no model.safetensors (nor an index of shards): only safetensors weights can be read');
    const text = await index.text();
    files.push({ name: 'model.safetensors.index.json', size: new TextEncoder().encode(text).length });
    let shards;
    try { shards = [...new Set(Object.values(JSON.parse(text).weight_map))]; } catch { fail('model.safetensors.index.json is not valid'); }
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
