// The training playground in Chromium: training starts, the loss falls and the heatmaps change,
// pause and resume work, a link replays a run exactly, and on balanced-key one head stays near
// chance while two heads solve it, side by side.
import { test, expect } from './guard.mjs';

const PAGE = '/web/playground.html';
const data = (page) => page.locator('.pg').evaluate((el) => ({ ...el.dataset }));
const firstHeadWeights = (page) => page.locator('.pg-heads canvas').first().evaluate((c) => Array.from(c._model.weights));

async function ready(page) {
  await page.waitForSelector('.pg[data-ready="true"]');
}

test('trains copy: the loss falls, the heatmaps change, pause and resume', async ({ page }) => {
  await page.goto(PAGE);
  await ready(page);
  const before = await data(page);
  expect(before.steps).toBe('0');
  await expect(page.locator('.pg-heads canvas')).toHaveCount(8);
  const weightsBefore = await firstHeadWeights(page);

  await page.click('button[data-action="play"]');
  await expect(page.locator('button[data-action="play"]')).toHaveText('Pause');
  await page.waitForFunction(() => Number(document.querySelector('.pg').dataset.accuracy) >= 0.99, null, { timeout: 30_000 });
  const trained = await data(page);
  console.log(`copy: target accuracy 99% reached at step ${trained.stepToTarget}, ${trained.secondsToTarget} s after play; ` +
    `${trained.reports} reports so far; share of worker time spent training ${trained.trainShare}`);
  expect(Number(trained.loss)).toBeLessThan(Number(before.loss) / 10);
  expect(Number(trained.reports)).toBeGreaterThan(2);  // the heatmaps were redrawn while training
  const weightsAfter = await firstHeadWeights(page);
  const change = weightsAfter.reduce((s, w, i) => s + Math.abs(w - weightsBefore[i]), 0);
  expect(change).toBeGreaterThan(0.5);

  await page.click('button[data-action="play"]');  // pause
  await expect(page.locator('.pg')).toHaveAttribute('data-playing', 'false');
  const paused = Number((await data(page)).steps);
  await page.waitForTimeout(400);
  expect(Number((await data(page)).steps)).toBe(paused);
  await expect(page).toHaveURL(new RegExp(`step=${paused}`));

  await page.click('button[data-action="play"]');  // resume
  await page.waitForFunction((s) => Number(document.querySelector('.pg').dataset.steps) > s, paused);
  await page.click('button[data-action="play"]');
  await expect(page.locator('.pg')).toHaveAttribute('data-playing', 'false');

  await page.click('button[data-action="step"]');
  await page.waitForFunction((s) => Number(document.querySelector('.pg').dataset.steps) > s + 0, paused);
});

test('a link replays the same run: same step, accuracy and heatmaps', async ({ page }) => {
  const link = `${PAGE}#task=reverse&layers=1&heads=2&d=16&lr=0.003&seed=3&step=150&sample=5`;
  const capture = async () => {
    await page.goto(link);
    await page.waitForFunction(() => document.querySelector('.pg').dataset.steps === '150'
      && document.querySelector('.pg').dataset.playing === 'false');
    return { ...(await data(page)), weights: await firstHeadWeights(page), index: await page.locator('.pg-sample-index').textContent() };
  };
  const first = await capture();
  await page.goto('about:blank');
  const second = await capture();
  expect(second.accuracy).toBe(first.accuracy);
  expect(second.loss).toBe(first.loss);
  expect(second.weights).toEqual(first.weights);
  expect(first.index).toBe('6 / 256');
  await expect(page.locator('select[data-key="task"]')).toHaveValue('reverse');
  await expect(page.locator('.pg-heads canvas')).toHaveCount(2);
});

test('balanced key: one head stays near chance, two heads solve it, side by side', async ({ page }) => {
  await page.goto(`${PAGE}#task=balanced-key`);
  await ready(page);
  await expect(page.locator('.pg-compare-box')).toBeVisible();
  const started = Date.now();
  await page.click('button[data-action="compare"]');
  await page.waitForFunction(() => [...document.querySelectorAll('.pg-run')].every((r) => r.dataset.accuracy), null, { timeout: 45_000 });
  const [one, two] = await page.locator('.pg-run').evaluateAll((runs) => runs.map((r) => Number(r.dataset.accuracy)));
  console.log(`balanced key after 1,500 steps: one head ${one}, two heads ${two} (both runs ${Date.now() - started} ms)`);
  expect(one).toBeLessThan(0.6);  // chance is 1/3
  expect(two).toBeGreaterThan(0.9);
  await expect(page.locator('.pg-run[data-heads="2"] .pg-heads canvas')).toHaveCount(2);
});

test('changing the task resets to its preset and updates the URL; bad links are explained', async ({ page }) => {
  await page.goto(PAGE);
  await ready(page);
  await page.selectOption('select[data-key="task"]', 'previous-token');
  await expect(page).toHaveURL(/task=previous-token&layers=2&heads=4&d=32/);
  await expect(page.locator('.pg-explain').first()).toContainText('just before it');
  await expect(page.locator('.pg-compare-box')).toBeHidden();
  await page.selectOption('select[data-key="heads"]', '3');  // 32 is not divisible by 3
  await expect(page.locator('.pg-message')).toContainText('divide d_model');
  await page.goto(`${PAGE}#task=copy&heads=3&lr=banana`);
  await ready(page);
  await expect(page.locator('.pg-message')).toContainText('Ignored lr="banana"');
  await expect(page.locator('.pg-message')).toContainText('not divisible by 3 heads');
});

test('fits a phone screen', async ({ page }) => {
  await page.setViewportSize({ width: 375, height: 740 });
  await page.goto(PAGE);
  await ready(page);
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  expect(overflow).toBeLessThanOrEqual(0);
});
