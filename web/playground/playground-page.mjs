// web/playground.html: the playground view, with its state in the URL hash.
import { PlaygroundView, playgroundSheet } from './playground-view.mjs';
import { parsePlaygroundHash, toPlaygroundHash } from './playground-state.mjs';
import { registerServiceWorker } from '../common/service-worker.mjs';

document.adoptedStyleSheets = [...document.adoptedStyleSheets, playgroundSheet];

const HASH_EVERY_MS = 1000;  // while playing, the URL's step is refreshed at most once a second
let lastHashWrite = 0;

function writeHash(state, { throttle = false } = {}) {
  const now = performance.now();
  if (throttle && now - lastHashWrite < HASH_EVERY_MS) return;
  lastHashWrite = now;
  const hash = toPlaygroundHash(state);
  if (location.hash !== hash) history.replaceState(null, '', hash);
}

const { state, warnings } = parsePlaygroundHash(location.hash);
const view = new PlaygroundView(document.getElementById('playground'), { state, onStateChange: writeHash });
if (warnings.length) view.showMessage(warnings.join('\n'));

window.addEventListener('hashchange', () => {
  if (location.hash === toPlaygroundHash(view.state)) return;
  const parsed = parsePlaygroundHash(location.hash);
  view.setState(parsed.state);
  if (parsed.warnings.length) view.showMessage(parsed.warnings.join('\n'));
});

registerServiceWorker();
