// Where a checkpoint's files come from, behind one interface, so loading is the same for a folder
// in Node, a base URL (a hub model's .../resolve/main/), or files the user handed over (File[],
// FileList, or a Map/object of name → Blob | ArrayBuffer | Uint8Array):
//   source.describe()            "… in the folder /x" (for messages)
//   source.text(name)            the file as text, or null when the source has no such file
//   source.size(name)            its size in bytes, or 0 when unknown (a URL without Content-Length)
//   source.read(name, onChunk)   every byte in order, in chunks (Uint8Array) of at most CHUNK bytes;
//                                onChunk may be async. Resolves to the byte count.
//   source.head(name, bytes)     the first `bytes` bytes (fewer if the file is shorter)

import { fail } from './checks.mjs';
import { inNode } from './environment.mjs';
import { hubUrl, isHubId } from './hub.mjs';

export const CHUNK = 4 << 20;  // what one copy into the wasm heap moves; never a whole file

function throwIfAborted(signal) {
  if (signal?.aborted) {
    const error = new Error('multihead: loading was cancelled');
    error.name = 'AbortError';
    throw error;
  }
}
export { throwIfAborted };

/**
 * Every byte of `stream` to onChunk, in chunks of CHUNK bytes (the last one shorter); resolves to
 * the byte count. A byte stream (a fetch body, Blob.stream() in Chromium) is read into one reused
 * buffer: parts of ~200 KB in a new ArrayBuffer each were fresh memory every time (first touch)
 * and a feed() each, and Chromium's Blob.slice().arrayBuffer() read files at a seventh of a
 * stream's rate. Other streams hand over their parts as they come. broke(bytes, error) throws
 * when reading fails.
 */
async function readStream(stream, onChunk, signal, broke) {
  let reader, buffer = null;
  try {
    reader = stream.getReader({ mode: 'byob' });
    buffer = new ArrayBuffer(CHUNK);
  } catch {
    reader = stream.getReader();
  }
  let total = 0, filled = 0;
  for (;;) {
    throwIfAborted(signal);
    let part;
    try {
      part = await (buffer ? reader.read(new Uint8Array(buffer, filled, CHUNK - filled)) : reader.read());
    } catch (error) {
      throwIfAborted(signal);
      broke(total + filled, error);
    }
    if (!buffer) {
      if (part.done) break;
      for (let at = 0; at < part.value.length; at += CHUNK) {
        const chunk = part.value.subarray(at, Math.min(part.value.length, at + CHUNK));
        total += chunk.length;
        await onChunk(chunk);
      }
      continue;
    }
    if (part.value) buffer = part.value.buffer;  // the read took the buffer over and gives it back
    if (!part.done) filled += part.value.length;
    if (filled > 0 && (filled === CHUNK || part.done)) {
      total += filled;
      await onChunk(new Uint8Array(buffer, 0, filled));
      filled = 0;
    }
    if (part.done) break;
  }
  return total;
}

// In Node, whether a path names a folder (a local folder called like a hub id wins, as in transformers).
async function isFolder(path) {
  const fsName = 'node:fs/promises';
  const fs = await import(/* @vite-ignore */ fsName);
  return fs.stat(path).then((s) => s.isDirectory(), () => false);
}

/**
 * Picks the source for what loadPretrained was given. A hub id ("gpt2", "Qwen/Qwen2.5-0.5B") is
 * read from the hub at `revision` (default main); hub replaces https://huggingface.co (a mirror).
 */
export async function openSource(source, signal, { revision, hub } = {}) {
  // A path or URL of one .gguf file: its folder, with the file named.
  if ((typeof source === 'string' || source instanceof URL) && /\.gguf$/i.test(String(source).replace(/[?#].*$/, ''))) {
    const text = String(source);
    if (revision !== undefined || hub !== undefined) fail('revision and hub apply to a hub id; give the GGUF file\'s name with { file } after the id');
    const cut = text.replace(/[?#].*$/, '').search(/[^/\\]+$/);
    const folder = cut > 0 ? text.slice(0, cut) : (/^(https?|blob):/i.test(text) ? fail(`"${text.slice(0, 80)}" is not a URL of a file`) : '.');
    const opened = await openSource(folder, signal);
    return { ...opened, file: decodeURIComponent(text.slice(cut).replace(/[?#].*$/, '')) };
  }
  if (typeof source === 'string' && isHubId(source) && !(inNode() && (await isFolder(source)))) {
    return { ...urlSource(hubUrl(source, { revision, hub }), signal), hubId: source };
  }
  if (revision !== undefined) fail('revision applies to a hub id (like gpt2 or Qwen/Qwen2.5-0.5B), not to a URL, a folder or files');
  if (hub !== undefined) fail('hub applies to a hub id (like gpt2 or Qwen/Qwen2.5-0.5B), not to a URL, a folder or files');
  if (typeof source === 'string' || source instanceof URL) {
    const text = String(source);
    if (/^(https?|blob|data):/i.test(text) || (!inNode() && !/^file:/i.test(text))) return urlSource(text, signal);
    if (!inNode()) fail('a folder path can be read only in Node: in a browser pass a URL or the File objects');
    return folderSource(text.startsWith('file:') ? new URL(text) : text, signal);
  }
  // One file or its bytes: a GGUF model is one file.
  if (typeof Blob === 'function' && source instanceof Blob) return memorySource(new Map([[source.name || 'model.gguf', source]]), signal);
  if (source instanceof ArrayBuffer || ArrayBuffer.isView(source)) return memorySource(new Map([['model.gguf', source]]), signal);
  const isFileList = typeof FileList === 'function' && source instanceof FileList;
  if (Array.isArray(source) || isFileList) {
    const files = new Map();
    for (const file of Array.from(source)) {
      if (!(typeof Blob === 'function' && file instanceof Blob)) fail('the files must be File (or Blob) objects with names');
      // A dropped folder gives paths such as "gpt2/config.json": the checkpoint's names are the last part.
      const name = String(file.name || '').split('/').pop();
      files.set(name, file);
    }
    return memorySource(files, signal);
  }
  if (source instanceof Map) return memorySource(source, signal);
  if (source && typeof source === 'object') return memorySource(new Map(Object.entries(source)), signal);
  return fail('loadPretrained needs a folder path (Node), a URL, File objects, or a Map of file name → bytes');
}

function memorySource(files, signal) {
  const get = (name) => {
    const value = files.get(name);
    if (value === undefined || value === null) return null;
    if (typeof Blob === 'function' && value instanceof Blob) return value;
    if (value instanceof ArrayBuffer) return new Uint8Array(value);
    if (ArrayBuffer.isView(value)) return new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
    if (typeof value === 'string') return new TextEncoder().encode(value);
    return fail(`the file "${name}" must be a Blob, File, ArrayBuffer or Uint8Array`);
  };
  const slice = async (data, from, to) => (data instanceof Uint8Array ? data.subarray(from, to)
    : new Uint8Array(await data.slice(from, to).arrayBuffer()));
  const sizeOf = (data) => (data instanceof Uint8Array ? data.length : data.size);
  return {
    describe: () => `among the ${files.size} files given (${[...files.keys()].slice(0, 8).join(', ')}${files.size > 8 ? ', …' : ''})`,
    names: () => [...files.keys()],
    async text(name) {
      const data = get(name);
      return data === null ? null : new TextDecoder().decode(await slice(data, 0, sizeOf(data)));
    },
    size: async (name) => { const data = get(name); return data === null ? 0 : sizeOf(data); },
    async head(name, bytes) {
      const data = get(name);
      return data === null ? new Uint8Array(0) : slice(data, 0, Math.min(bytes, sizeOf(data)));
    },
    async read(name, onChunk) {
      const data = get(name);
      const size = sizeOf(data);
      if (!(data instanceof Uint8Array) && typeof data.stream === 'function') {
        return readStream(data.stream(), onChunk, signal, (bytes, error) => {
          fail(`reading ${name} failed after ${bytes} bytes (${error.message}): was the file changed or removed?`);
        });
      }
      for (let at = 0; at < size; at += CHUNK) {
        throwIfAborted(signal);
        await onChunk(await slice(data, at, Math.min(size, at + CHUNK)));
      }
      return size;
    },
  };
}

async function folderSource(path, signal) {
  const fsName = 'node:fs/promises', pathName = 'node:path';
  const fs = await import(/* @vite-ignore */ fsName);
  const { join } = await import(/* @vite-ignore */ pathName);
  const dir = path instanceof URL ? path : String(path);
  const file = (name) => (dir instanceof URL ? new URL(name, dir.href.endsWith('/') ? dir : `${dir.href}/`) : join(dir, name));
  try {
    if (!(await fs.stat(dir)).isDirectory()) fail(`${dir} is not a folder: pass the folder that holds config.json`);
  } catch (error) {
    if (error.code === 'ENOENT') fail(`there is no folder ${dir}`);
    throw error;
  }
  const exists = async (name) => fs.stat(file(name)).then((s) => s.isFile(), () => false);
  return {
    describe: () => `in the folder ${dir}`,
    names: async () => fs.readdir(dir),
    text: async (name) => ((await exists(name)) ? fs.readFile(file(name), 'utf8') : null),
    size: async (name) => ((await exists(name)) ? (await fs.stat(file(name))).size : 0),
    async head(name, bytes) {
      if (!(await exists(name))) return new Uint8Array(0);
      const handle = await fs.open(file(name), 'r');
      try {
        const buffer = new Uint8Array(bytes);
        const { bytesRead } = await handle.read(buffer, 0, bytes, 0);
        return buffer.subarray(0, bytesRead);
      } finally { await handle.close(); }
    },
    async read(name, onChunk) {
      const handle = await fs.open(file(name), 'r');
      const buffer = new Uint8Array(CHUNK);
      let total = 0;
      try {
        for (;;) {
          throwIfAborted(signal);
          const { bytesRead } = await handle.read(buffer, 0, CHUNK, total);
          if (bytesRead === 0) break;
          total += bytesRead;
          await onChunk(buffer.subarray(0, bytesRead));
        }
      } finally { await handle.close(); }
      return total;
    },
  };
}

function urlSource(base, signal) {
  // A relative URL (a page's own folder of models) resolves against the page or worker.
  let root;
  try {
    root = new URL(base.endsWith('/') ? base : `${base}/`, globalThis.location?.href).href;
  } catch {
    fail(`"${base.slice(0, 80)}" is not a URL a checkpoint can be read from: give a hub id, an http(s) address of the folder, a folder path (Node) or the files`);
  }
  if (/^data:/i.test(root)) fail('a data: URL holds one file, not a checkpoint folder: give a hub id, an http(s) address of the folder, a folder path (Node) or the files');
  const url = (name) => new URL(name, root).href;
  const request = async (name, headers) => {
    let response;
    try {
      response = await fetch(url(name), { signal, headers });
    } catch (error) {
      throwIfAborted(signal);
      fail(`could not fetch ${url(name)} (${error.message}): the network is down, or the server does not allow ` +
        'this page to read it (CORS)');
    }
    if (response.status === 404 || response.status === 403 || response.status === 401) return null;
    if (!response.ok) fail(`fetching ${url(name)} failed: HTTP ${response.status} ${response.statusText}`);
    return response;
  };
  const sizes = new Map();
  return {
    describe: () => `at ${root}`,
    async text(name) {
      const response = await request(name);
      return response ? response.text() : null;
    },
    async size(name) {
      if (!sizes.has(name)) {
        const response = await request(name, { Range: 'bytes=0-0' });
        // 206 Content-Range: bytes 0-0/TOTAL; a server that ignores Range sends it all, with Content-Length.
        const range = response?.headers.get('Content-Range');
        const total = range ? Number(range.split('/')[1]) : Number(response?.headers.get('Content-Length') || 0);
        await response?.body?.cancel().catch(() => {});
        sizes.set(name, Number.isFinite(total) ? total : 0);
      }
      return sizes.get(name);
    },
    async head(name, bytes) {
      const response = await request(name, { Range: `bytes=0-${bytes - 1}` });
      if (!response) return new Uint8Array(0);
      const reader = response.body.getReader();
      const out = new Uint8Array(bytes);
      let have = 0;
      while (have < bytes) {
        const { done, value } = await reader.read();
        if (done) break;
        const take = Math.min(value.length, bytes - have);
        out.set(value.subarray(0, take), have);
        have += take;
      }
      await reader.cancel().catch(() => {});
      return out.subarray(0, have);
    },
    async read(name, onChunk) {
      const response = await request(name);
      if (!response) fail(`${url(name)} is missing`);
      return readStream(response.body, onChunk, signal, (bytes, error) => {
        fail(`the download of ${name} broke off after ${bytes} bytes (${error.message}): try again`);
      });
    },
  };
}
