// The pages' service worker (sw.js at the site's root): offline support, and cross-origin isolation where the host
// sends no COOP/COEP headers (GitHub Pages and the like). The worker adds those headers to every
// page it serves, as coi-serviceworker does, so a page it controls is isolated and may run the
// threaded build. A first visit is served before the worker controls it: the page reloads once
// when the worker takes over, unless the user has already started using it (a dropped file or a
// half-typed text would be lost); then the next visit is the isolated one.
const RELOADED = 'multihead-isolation-reload';

export function registerServiceWorker() {
  if (!('serviceWorker' in navigator) || !location.protocol.startsWith('http')) return;
  navigator.serviceWorker.register('../sw.js').catch((e) => console.warn('offline support unavailable:', e.message));
  // Before 0.3 the worker was web/sw.js, whose scope (web/) would keep these pages from the new one.
  navigator.serviceWorker.getRegistrations().then((all) => {
    for (const old of all) if (new URL(old.scope).pathname.endsWith('/web/')) old.unregister();
  }).catch(() => {});
  if (globalThis.crossOriginIsolated) {
    sessionStorage.removeItem(RELOADED);
    return;
  }
  let used = false;
  for (const type of ['pointerdown', 'keydown', 'input', 'drop']) {
    addEventListener(type, () => { used = true; }, { capture: true, once: true });
  }
  // Once per tab session: a browser that still does not isolate the page (no SharedArrayBuffer, or
  // a reload that bypassed the worker) keeps one thread rather than reloading in a loop.
  const reloadOnce = () => {
    if (used || sessionStorage.getItem(RELOADED)) return;
    sessionStorage.setItem(RELOADED, '1');
    location.reload();
  };
  if (navigator.serviceWorker.controller) reloadOnce();
  else navigator.serviceWorker.addEventListener('controllerchange', reloadOnce, { once: true });
}
