// Hub ids in the library: loadPretrained('gpt2'), a revision, and the size-first file listing,
// against an imitation of the hub's URL layout on 127.0.0.1 (tests/browser/hub-server.mjs; the
// real hub is never reached by a test). The numbers checked are transformers' own.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { hubUrl, isHubId, listCheckpointFiles, loadPretrained, resolveSource } from '../../bindings/multihead.mjs';
import { startHubServer } from '../browser/hub-server.mjs';
import { FIXTURES, expectedOutputs, maxAbs, maxAbsDiff } from './checkpoints.mjs';

let hub;
beforeAll(async () => { hub = await startHubServer(0); });
afterAll(async () => { await hub?.close(); });

describe('hub ids', () => {
  it('tells ids from URLs and paths, and makes the hub\'s resolve URL', () => {
    for (const id of ['gpt2', 'Qwen/Qwen2.5-0.5B', 'EleutherAI/pythia-70m-deduped']) expect(isHubId(id), id).toBe(true);
    for (const other of ['./gpt2', '/models/gpt2', 'https://x.org/gpt2', '../gpt2', 'a/b/c', 'gpt2/../x', '']) expect(isHubId(other), other).toBe(false);
    expect(hubUrl('Qwen/Qwen2.5-0.5B')).toBe('https://huggingface.co/Qwen/Qwen2.5-0.5B/resolve/main/');
    expect(hubUrl('gpt2', { revision: 'v1.0' })).toBe('https://huggingface.co/gpt2/resolve/v1.0/');
    expect(resolveSource('./models/x', { base: 'http://site.example/pages/a.html' })).toBe('http://site.example/pages/models/x/');
    expect(() => hubUrl('gpt2', { revision: 'has space' })).toThrow(/revision must be a branch, tag or commit/);
    expect(() => resolveSource('not an id!')).toThrow(/neither a Hugging Face model id .* nor a URL/);
  });

  it("loadPretrained('gpt2') reads the hub's files and gives transformers' numbers", async () => {
    const model = await loadPretrained('gpt2', { hub: hub.url });
    expect(model.config.architecture).toBe('gpt2');
    const c = expectedOutputs('gpt2')[0];
    expect(Array.from(model.tokenize(c.text).ids)).toEqual(Array.from(c.ids));
    const out = model.run(c.ids, { hiddenStates: true });
    expect(maxAbsDiff(out.attentions, c.attentions)).toBeLessThan(1e-4);
    expect(maxAbsDiff(out.logits, c.logits)).toBeLessThan(1e-3 * Math.max(1, maxAbs(c.logits)));
    model.dispose();
  });

  it('takes a revision (the imitation serves revision R from the fixture R) and refuses one without a hub id', async () => {
    const model = await loadPretrained('some-org/model', { hub: hub.url, revision: 'qwen2' });
    expect(model.config.architecture).toBe('qwen2');
    model.dispose();
    await expect(loadPretrained(join(FIXTURES, 'gpt2'), { revision: 'main' })).rejects.toThrow(/revision applies to a hub id/);
    await expect(loadPretrained('no-such-model', { hub: hub.url })).rejects.toThrow(/no config\.json/);
  });

  it('lists the files with their sizes before downloading any weights', async () => {
    const plan = await listCheckpointFiles(resolveSource('llama', { hub: hub.url }));
    const names = plan.files.map((f) => f.name);
    expect(names).toEqual(expect.arrayContaining(['config.json', 'model.safetensors', 'tokenizer.json']));
    for (const f of plan.files) expect(f.size, f.name).toBe(statSync(join(FIXTURES, 'llama', f.name)).size);
    expect(plan.total).toBe(plan.files.reduce((s, f) => s + f.size, 0));
  });

  it('a GGUF file of a hub repository: its URL, its one file with its size, then the model', async () => {
    expect(resolveSource('Qwen/Qwen2.5-0.5B-Instruct-GGUF/qwen2.5-0.5b-instruct-q4_k_m.gguf'))
      .toBe('https://huggingface.co/Qwen/Qwen2.5-0.5B-Instruct-GGUF/resolve/main/qwen2.5-0.5b-instruct-q4_k_m.gguf');
    expect(resolveSource('./models/x.gguf', { base: 'http://site.example/pages/a.html' })).toBe('http://site.example/pages/models/x.gguf');
    const url = resolveSource('local/GGUF/llama-q8_0.gguf', { hub: hub.url });
    const plan = await listCheckpointFiles(url);
    expect(plan.files).toEqual([{ name: 'llama-q8_0.gguf', size: statSync(join(process.cwd(), 'tests/fixtures/gguf/llama-q8_0/model.gguf')).size }]);
    expect(plan.total).toBe(plan.files[0].size);
    await expect(listCheckpointFiles(resolveSource('local/GGUF/none.gguf', { hub: hub.url }))).rejects.toThrow(/no none\.gguf/);
    const model = await loadPretrained(url);
    expect(model.config.modelType).toBe('llama');
    model.dispose();
  });
});
