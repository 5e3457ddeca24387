// Hugging Face checkpoints in Chromium: loaded from File objects (the file input), inside a Web
// Worker, and from a URL; the numbers are transformers' (tests/fixtures/hf). A truncated file and a
// folder that is not a model get their reason in words.
import { join } from 'node:path';
import { test, expect } from './guard.mjs';
import { FIXTURES, expectedOutputs, maxAbs, maxAbsDiff } from '../js/checkpoints.mjs';

const filesOf = (model) => ['config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json']
  .map((name) => join(FIXTURES, model, name));

function expectTransformers(got, model, k) {
  const want = expectedOutputs(model)[k];
  expect(got.error).toBeUndefined();
  expect(got.ids).toEqual(Array.from(want.ids));
  expect(maxAbsDiff(got.attentions, want.attentions)).toBeLessThan(1e-4);
  expect(maxAbsDiff(got.logits, want.logits)).toBeLessThan(1e-3 * maxAbs(want.logits));
}

test.beforeEach(async ({ page }) => {
  await page.goto('/tests/browser/fixtures/pretrained.html');
  await page.waitForFunction(() => window.ready === true);
});

for (const [model, k] of [['llama', 3], ['bert', 5]]) {
  test(`${model}: File objects from the file input, in the page and in a Worker`, async ({ page }) => {
    await page.setInputFiles('#files', filesOf(model));
    const c = expectedOutputs(model)[k];
    expectTransformers(await page.evaluate(([t, p]) => window.runFromInput(t, p), [c.text, c.text_pair]), model, k);
    expectTransformers(await page.evaluate(([t, p]) => window.runInWorker(t, p), [c.text, c.text_pair]), model, k);
  });
}

test('qwen2 from a URL (fetched, headers first with a byte range)', async ({ page }) => {
  const c = expectedOutputs('qwen2')[3];
  const got = await page.evaluate((t) => window.runFromUrl('/tests/fixtures/hf/qwen2/', t), c.text);
  expectTransformers(got, 'qwen2', 3);
});

test('a truncated checkpoint and a folder that is not a model: reasons in words, then a good load', async ({ page }, info) => {
  const { readFileSync, writeFileSync, mkdirSync } = await import('node:fs');
  const dir = info.outputPath('broken');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'config.json'), readFileSync(join(FIXTURES, 'gpt2', 'config.json')));
  writeFileSync(join(dir, 'model.safetensors'), readFileSync(join(FIXTURES, 'gpt2', 'model.safetensors')).subarray(0, 100000));
  await page.setInputFiles('#files', [join(dir, 'config.json'), join(dir, 'model.safetensors')]);
  expect((await page.evaluate(() => window.runFromInput('hello'))).error).toMatch(/truncated/);
  await page.setInputFiles('#files', [join(FIXTURES, 'README.md')]);
  expect((await page.evaluate(() => window.runFromInput('hello'))).error).toMatch(/no config\.json/);
  await page.setInputFiles('#files', filesOf('gpt2'));
  const c = expectedOutputs('gpt2')[0];
  expectTransformers(await page.evaluate((t) => window.runFromInput(t), c.text), 'gpt2', 0);
});
