// The trained-model view in Chromium: it loads the shipped model, draws the layers × heads grid
// with measured roles, updates as the user types, ablates a head (and the prediction changes),
// shows the rollout, and keeps everything in the URL.
import { test, expect } from './guard.mjs';

const PAGE = '/web/model.html';

async function ready(page) {
  await page.waitForSelector('body[data-ready="true"]');
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
}

const predictions = (page, nth = 0) => page.locator('.prediction').nth(nth).locator('.word').allTextContents();

test('loads the model and shows a 2 × 4 grid labelled with measured roles', async ({ page }) => {
  const started = Date.now();
  await page.goto(PAGE);
  await ready(page);
  const readyMs = Date.now() - started;
  const { loadMs, parseMs } = await page.evaluate(() => ({ ...document.body.dataset }));
  console.log(`trained-model view: wasm + model loaded in ${loadMs} ms (parsing the model ${parseMs} ms); ` +
    `first grid ${readyMs} ms after navigation`);
  await expect(page.locator('#grid figure')).toHaveCount(8);
  const roles = await page.locator('#grid figure').evaluateAll((fs) => fs.map((f) => f.dataset.role));
  expect(roles).toContain('previous token');
  expect(roles).toContain('induction');
  await expect(page.locator('#roles tbody tr')).toHaveCount(8);
  // Every head's heatmap is n × n for the demo text's tokens.
  const n = await page.locator('#tokens .token').count();
  const sizes = await page.locator('#grid canvas').evaluateAll((cs) => cs.map((c) => [c._model.nQ, c._model.nK]));
  expect(sizes).toEqual(Array(8).fill([n, n]));
  expect((await predictions(page)).length).toBe(5);
});

test('typing updates the tokens, marks unknown words, and the heatmaps follow', async ({ page }) => {
  await page.goto(PAGE);
  await ready(page);
  await page.locator('#text').fill('');
  await page.locator('#text').pressSequentially('Elizabeth smiled at the zorblax');
  await ready(page);
  await expect(page.locator('#tokens .token')).toHaveText(['Elizabeth', 'smiled', 'at', 'the', 'zorblax']);
  await expect(page.locator('#tokens .token.unk')).toHaveText(['zorblax']);
  await expect(page.locator('#messages')).toContainText('not in the model');
  const sizes = await page.locator('#grid canvas').evaluateAll((cs) => cs.map((c) => c._model.nQ));
  expect(sizes).toEqual(Array(8).fill(5));
  expect(page.url()).toContain('text=Elizabeth+smiled+at+the+zorblax');
});

test('switching the induction heads off changes the prediction, and the link keeps it', async ({ page }) => {
  // "… Elizabeth said nothing. Mr. Darcy bowed again, and Elizabeth": with its induction heads the
  // model predicts what followed "Elizabeth" before.
  const text = 'Mr. Darcy bowed, and Elizabeth said nothing. Mr. Darcy bowed again, and Elizabeth';
  await page.goto(`${PAGE}#text=${encodeURIComponent(text)}`);
  await ready(page);
  const before = await predictions(page);
  expect(before[0]).toBe('said');
  const induction = page.locator('#grid figure[data-role="induction"]');
  const count = await induction.count();
  for (let i = 0; i < count; i++) await induction.nth(i).locator('.switch').click();
  await ready(page);
  await expect(page.locator('.prediction')).toHaveCount(2);
  expect(await predictions(page, 0)).toEqual(before);  // "every head on" is unchanged
  const after = await predictions(page, 1);
  expect(after[0]).not.toBe('said');
  expect(page.url()).toMatch(/off=\d\.\d/);
  // Reloading the link reproduces the ablated view.
  await page.reload();
  await ready(page);
  await expect(page.locator('.prediction')).toHaveCount(2);
  expect(await predictions(page, 1)).toEqual(after);
  await expect(page.locator('#grid figure.ablated')).toHaveCount(count);
});

test('rollout view, clicking a token to choose the position, and a hostile link', async ({ page }) => {
  await page.goto(`${PAGE}#text=Emma+was+happy&view=rollout&off=9.9,1.1&pos=abc`);
  await ready(page);
  await expect(page.locator('#grid figure')).toHaveCount(1);
  await expect(page.locator('#messages')).toContainText('Ignored off="9.9"');
  await expect(page.locator('#messages')).toContainText('Ignored pos="abc"');
  await expect(page.locator('#grid figure.ablated')).toHaveCount(0);
  await page.locator('#tokens .token').first().click();
  await ready(page);
  await expect(page.locator('#predictAt')).toContainText('after “Emma” (token 0)');
  expect(page.url()).toContain('pos=0');
  // 200 words: the model reads the last 128 tokens, and says so.
  await page.locator('#text').fill(Array.from({ length: 200 }, (_, i) => (i % 2 ? 'the' : 'lady')).join(' '));
  await ready(page);
  await expect(page.locator('#messages')).toContainText('reads at most 128');
  await expect(page.locator('#tokens .token')).toHaveCount(128);
});
