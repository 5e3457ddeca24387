// One keystroke on the "Your model" page, as the page benchmarks time it (bench/your-model-page.mjs,
// bench/largest-checkpoint.mjs): sets the text (an input event, as typing makes), waits until it is
// drawn, and returns the page's own timing of it (forward pass in the worker, drawing, total, tokens
// reused). Waits on the page's own signal (a MutationObserver), not page.waitForFunction: that
// polls on requestAnimationFrame, which makes the page produce a frame every 16 ms while the worker
// computes (9 frames a keystroke in a trace, each committing the page on the main thread), work a
// typing user does not cause and that takes the cores from the pass.
export async function keystroke(page, text) {
  const drawn = page.evaluate(() => new Promise((resolve) => {
    const observer = new MutationObserver(() => {
      if (document.body.dataset.ready === 'true') { observer.disconnect(); resolve(); }
    });
    observer.observe(document.body, { attributes: true, attributeFilter: ['data-ready'] });
  }));
  await page.locator('#mvText').fill(text);
  await drawn;
  return page.locator('.timing').last().evaluate((el) => ({
    forwardMs: Number(el.dataset.forwardMs), drawMs: Number(el.dataset.drawMs), totalMs: Number(el.dataset.totalMs), reused: Number(el.dataset.reused),
  }));
}
