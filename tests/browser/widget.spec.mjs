import { test, expect } from './guard.mjs';

const DOCS = '/web/widget.html';

// Heads and cells drawn by one widget: [{ head, nQ, nK }].
async function drawnIn(page, selector) {
  return page.locator(selector).evaluate((el) => [...el.shadowRoot.querySelectorAll('canvas')].map((c) => ({ head: Number(c.dataset.head), nQ: c._model?.nQ, nK: c._model?.nK })));
}

async function rendered(page, selector) {
  await page.locator(selector).scrollIntoViewIfNeeded();
  await page.waitForFunction((s) => document.querySelector(s)?.shadowRoot.querySelector('canvas')?._model, selector);
}

test('three differently configured widgets and an iframe render the right heads and cells; wasm fetched once', async ({ page }) => {
  const wasmRequests = [];
  page.on('request', (r) => { if (r.url().endsWith('.wasm')) wasmRequests.push(r.url()); });
  await page.goto(DOCS);
  await rendered(page, '#ex-basic multihead-attention');
  expect(await drawnIn(page, '#ex-basic multihead-attention')).toEqual([0, 1, 2, 3].map((head) => ({ head, nQ: 6, nK: 6 })));
  await rendered(page, '#ex-minimal multihead-attention');
  expect(await drawnIn(page, '#ex-minimal multihead-attention')).toHaveLength(8);
  expect((await drawnIn(page, '#ex-minimal multihead-attention'))[7]).toEqual({ head: 7, nQ: 11, nK: 11 });
  await rendered(page, '#ex-head multihead-attention');
  expect(await drawnIn(page, '#ex-head multihead-attention')).toEqual([{ head: 0, nQ: 8, nK: 8 }]);
  // The hand-built head 0 attends to the previous token.
  const prev = await page.locator('#ex-head multihead-attention').evaluate((el) => {
    const m = el.shadowRoot.querySelector('canvas')._model;
    return Array.from({ length: m.nQ - 1 }, (_, i) => m.weights[(i + 1) * m.nK + i]);
  });
  expect(Math.min(...prev)).toBeGreaterThan(0.5);
  await rendered(page, '#ex-cross multihead-attention');
  expect(await drawnIn(page, '#ex-cross multihead-attention')).toEqual([{ head: 0, nQ: 6, nK: 6 }, { head: 1, nQ: 6, nK: 6 }].map((h, i) => ({ ...h, nK: 7 })));

  await page.locator('#iframe-example').scrollIntoViewIfNeeded();
  const frame = page.frameLocator('#iframe-example');
  await expect(frame.locator('body[data-ready="true"]')).toHaveCount(1);
  await expect(frame.locator('#heads canvas')).toHaveCount(4);
  await expect(frame.locator('header')).toBeHidden();
  await expect(frame.locator('.controls')).toBeHidden();

  // Every widget below, scrolled into view, still shares the one module.
  for (const id of ['ex-walkthrough', 'ex-stats', 'ex-theme', 'ex-events']) await rendered(page, `#${id} multihead-attention`);
  const moduleWasm = wasmRequests.filter((u) => /\/dist\/multihead_core(_relaxed)?\.wasm/.test(u));
  // the page once, the iframe (another document) once, the playground example's training worker
  // (another realm) once
  expect(moduleWasm.length, wasmRequests.join('\n')).toBeLessThanOrEqual(3);
  const mainDocumentWasm = await page.evaluate(() => performance.getEntriesByType('resource').filter((e) => e.name.endsWith('.wasm')).length);
  expect(mainDocumentWasm).toBe(1);
});

test('the module is not fetched before a widget scrolls into view', async ({ page }) => {
  const wasm = [];
  page.on('request', (r) => { if (r.url().endsWith('.wasm')) wasm.push(r.url()); });
  await page.goto('/tests/browser/fixtures/lazy.html');
  await page.waitForFunction(() => customElements.get('multihead-attention') !== undefined);
  await page.waitForTimeout(500);
  expect(wasm).toEqual([]);
  await rendered(page, '#far');
  expect(wasm).toHaveLength(1);
  expect(await drawnIn(page, '#far')).toHaveLength(4);
});

test('attribute and property changes re-render', async ({ page }) => {
  await page.goto(DOCS);
  const sel = '#ex-basic multihead-attention';
  await rendered(page, sel);
  await page.locator(sel).evaluate((el) => el.setAttribute('heads', '2'));
  await expect.poll(() => drawnIn(page, sel)).toEqual([{ head: 0, nQ: 6, nK: 6 }, { head: 1, nQ: 6, nK: 6 }]);
  await page.locator(sel).evaluate((el) => { el.sentence = 'Short one'; el.view = 'head'; el.head = 1; });
  await expect.poll(() => drawnIn(page, sel)).toEqual([{ head: 1, nQ: 2, nK: 2 }]);
  expect(await page.locator(sel).evaluate((el) => [el.heads, el.sentence, el.causal])).toEqual([2, 'Short one', false]);
  await page.locator(sel).evaluate((el) => { el.causal = true; });
  await expect.poll(() => page.locator(sel).evaluate((el) => el.shadowRoot.querySelector('canvas')._model.weights[1])).toBe(0);
  // An invalid value is replaced and reported inside the widget, not thrown.
  await page.locator(sel).evaluate((el) => el.setAttribute('heads', '7'));
  await expect(page.locator(`${sel} >> .message`)).toContainText('heads="7" is not one of');
  // Minimal controls write attributes back.
  const minimal = '#ex-minimal multihead-attention';
  await rendered(page, minimal);
  await page.locator(`${minimal} >> input[type=text]`).fill('New words here');
  await expect.poll(() => page.locator(minimal).getAttribute('sentence')).toBe('New words here');
  await expect.poll(async () => (await drawnIn(page, minimal))[0].nQ).toBe(3);
});

test('events fire on hover and head selection, and the host page reacts', async ({ page }) => {
  await page.goto(DOCS);
  const sel = '#events-widget';
  await rendered(page, sel);
  await page.evaluate(() => {
    window.events = [];
    const w = document.getElementById('events-widget');
    w.addEventListener('attention-hover', (e) => window.events.push(['hover', e.detail]));
    document.addEventListener('head-select', (e) => window.events.push(['select', e.detail]));  // bubbles and is composed
  });
  const canvas = page.locator(`${sel} >> canvas`).nth(1);
  const geom = await canvas.evaluate((c) => c._geom);
  await canvas.hover({ position: { x: geom.left + 2.5 * geom.cell, y: geom.top + 0.5 * geom.cell } });
  const [kind, detail] = await page.evaluate(() => window.events.at(-1));
  expect(kind).toBe('hover');
  expect(detail).toMatchObject({ head: 1, query: 0, key: 2, queryToken: 'The', keyToken: ',' });
  const api = await page.locator(sel).evaluate((el) => el.shadowRoot.querySelectorAll('canvas')[1]._model.weights[2]);
  expect(detail.weight).toBe(api);
  await expect(page.locator('#host-token-0')).toHaveClass(/query/);
  await expect(page.locator('#host-token-2')).toHaveClass(/key/);
  await canvas.click({ position: { x: geom.left + 2.5 * geom.cell, y: geom.top + 0.5 * geom.cell } });
  await expect.poll(() => page.evaluate(() => window.events.filter(([k]) => k === 'select').map(([, d]) => d.head))).toEqual([1]);
});

test('host CSS does not leak in; custom properties and ::part do', async ({ page }) => {
  await page.goto(DOCS);
  await page.addStyleTag({ content: `
    body { letter-spacing: 7px; font-family: serif; color: rgb(255, 0, 0); }
    canvas { border: 13px solid red !important; }
    figure { margin: 90px !important; }
    table, td, th { font-size: 40px !important; }` });
  const basic = '#ex-basic multihead-attention';
  await rendered(page, basic);
  const inside = await page.locator(basic).evaluate((el) => {
    const canvas = el.shadowRoot.querySelector('canvas');
    const fig = el.shadowRoot.querySelector('figure');
    const readout = el.shadowRoot.querySelector('.readout');
    return { border: getComputedStyle(canvas).borderTopWidth, margin: getComputedStyle(fig).marginTop,
      spacing: getComputedStyle(readout).letterSpacing, color: getComputedStyle(readout).color };
  });
  expect(inside.border).toBe('0px');
  expect(inside.margin).toBe('0px');
  expect(inside.spacing).toBe('normal');
  expect(inside.color).not.toBe('rgb(255, 0, 0)');
  const themed = '#ex-theme multihead-attention';
  await rendered(page, themed);
  const styled = await page.locator(themed).evaluate((el) => ({
    background: getComputedStyle(el).backgroundColor,
    title: getComputedStyle(el.shadowRoot.querySelector('figcaption')).fontWeight,
  }));
  expect(styled).toEqual({ background: 'rgb(253, 246, 227)', title: '700' });
  // Nothing from the widget's own stylesheet leaks out into the page.
  expect(await page.evaluate(() => getComputedStyle(document.querySelector('main section figure') ?? document.body).borderTopWidth)).not.toBe('1px');
});

test('keyboard: tab into a widget, arrows read weights, Enter selects a head', async ({ page }) => {
  await page.goto(DOCS);
  const sel = '#ex-basic multihead-attention';
  await rendered(page, sel);
  await page.locator(`${sel} >> canvas`).nth(2).focus();
  await page.keyboard.press('ArrowRight');
  await expect(page.locator(`${sel} >> .readout`)).toContainText('Head 3 · “The” → “cat”');
  await page.keyboard.press('Enter');
  await expect.poll(() => page.locator(sel).getAttribute('head')).toBe('2');
  await expect.poll(() => page.locator(sel).evaluate((el) => el.shadowRoot.activeElement?.dataset.head)).toBe('2');
});

test('view="playground" embeds a training playground configured by attributes', async ({ page }) => {
  await page.goto(DOCS);
  const widget = page.locator('#ex-playground multihead-attention');
  await widget.scrollIntoViewIfNeeded();
  const pg = widget.locator('.pg');  // Playwright's CSS locators pierce the open shadow root
  await expect(pg).toHaveAttribute('data-ready', 'true', { timeout: 20_000 });  // loads the module and the trainer first
  await expect(widget.locator('select[data-key="task"]')).toHaveValue('reverse');
  await expect(widget.locator('.pg-heads canvas')).toHaveCount(2);  // layers="1" heads="2"
  await widget.locator('button[data-action="play"]').click();
  await expect.poll(async () => Number(await pg.getAttribute('data-accuracy')), { timeout: 30_000 }).toBeGreaterThan(0.9);
  await widget.locator('button[data-action="play"]').click();
  await expect(pg).toHaveAttribute('data-playing', 'false');
  // Attributes stay reactive: another task and a bad value, explained inside the widget.
  await widget.evaluate((el) => { el.setAttribute('task', 'copy'); el.setAttribute('d-model', '48'); });
  await expect(widget.locator('select[data-key="task"]')).toHaveValue('copy');
  await expect(widget.locator('.pg-message')).toContainText('Ignored d="48" from the attributes');
  // Back to an attention view: the playground goes away and the heatmaps return.
  await widget.evaluate((el) => el.setAttribute('view', 'heatmaps'));
  await expect(widget.locator('.pg')).toHaveCount(0);
  await page.waitForFunction(() => document.querySelector('#ex-playground multihead-attention').shadowRoot.querySelector('canvas')?._model);
});
