// GGUF files (llama.cpp's one-file models) through the same loader as safetensors checkpoints: the
// C++ reader (src/io/gguf_model.h) parses the header, turns its metadata into the config and its
// tensor names into the family's; this file feeds it the header (growing the prefix read until the
// header fits) and then the file's bytes, a chunk at a time.
import { fail } from './checks.mjs';
import { loadMultihead } from './runtime.mjs';

export const isGgufName = (name) => typeof name === 'string' && /\.gguf$/i.test(name);

// Metadata is most of a header: 150k-token vocabularies with merges or scores take 5–20 MB.
const FIRST_READ = 8 << 20;
const MOST_HEADER = 512 << 20;

// Stages the file's first bytes, more each time the reader asks, until `register(n)` takes them.
async function stageHeader(core, files, name, size, register) {
  for (let want = Math.min(size, FIRST_READ); ; want = Math.min(size, want * 4)) {
    const head = await files.head(name, want);
    if (head.length < Math.min(want, 24)) fail(`${name} has ${head.length} bytes, fewer than a GGUF header (24): it is not a GGUF file, or it is truncated`);
    core.stage(head.length);
    core.view('stage').set(head);
    const result = register(head.length);
    if (result !== null) return result;
    if (!core.needsMore() || head.length >= size || want >= MOST_HEADER) fail(`${name}: ${core.error()}`);
  }
}

/**
 * Loads GGUF file `name` of `files` into `core` (a PretrainedCore): its header, then every byte.
 * storage: 0 as stored (8-, 6-, 5- and 4-bit blocks kept, other types widened to float32), 1 f16, 2 bf16;
 * null: as stored where that fits in memory, else bf16. Returns the metadata and the config.json
 * it implies.
 */
export async function loadGguf(core, files, name, { storage, onProgress }) {
  const size = await files.size(name);
  if (!size) fail(`${name} is empty, or its size is unknown (the server sent no length): a GGUF file is read by byte ranges`);
  const index = await stageHeader(core, files, name, size, (n) => {
    const i = core.addGguf(name, n, size);
    return i >= 0 ? i : null;
  });
  const metadata = JSON.parse(core.ggufMetadata());
  const config = JSON.parse(core.ggufConfig());
  let planError = core.plan(storage ?? 0);
  if (planError && storage === null && !core.plan(2)) planError = '';  // did not fit as float32: bf16 does
  if (planError) fail(planError);
  let loaded = 0;
  const got = await files.read(name, (chunk) => {
    core.stage(chunk.length);
    core.view('stage').set(chunk);
    const error = core.feed(index, chunk.length);
    if (error) fail(error);
    loaded += chunk.length;
    onProgress?.({ loaded, total: size, file: name });
  });
  if (got < size) fail(`${name} ended after ${got} of its ${size} bytes: the file is truncated (download it again)`);
  return { metadata, config };
}

/**
 * A GGUF file's metadata as a plain object (key → string, number, boolean or array), from the file's
 * bytes or its first bytes (then fileSize is the whole file's size). Any GGUF file, whatever its
 * architecture; a malformed one is an Error that says what is wrong.
 * @param {Uint8Array | ArrayBuffer} bytes
 * @param {number} [fileSize]
 */
export async function readGgufMetadata(bytes, fileSize) {
  const data = bytes instanceof ArrayBuffer ? new Uint8Array(bytes) : bytes;
  if (!(data instanceof Uint8Array)) fail('readGgufMetadata needs the file as a Uint8Array or ArrayBuffer');
  const size = fileSize ?? data.length;
  if (!Number.isInteger(size) || size < data.length) fail(`fileSize must be the whole file's size in bytes (≥ the ${data.length} given)`);
  const { PretrainedCore } = await loadMultihead();
  const core = new PretrainedCore();
  try {
    core.stage(data.length);
    core.view('stage').set(data);
    const json = core.readGgufMetadata(data.length, size);
    if (!json) fail(core.error());
    return JSON.parse(json);
  } finally {
    core.delete();
  }
}
