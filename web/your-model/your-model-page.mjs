// The "Your model" page: getting a checkpoint in (dropped or picked files and folders, a hub id or
// URL with its size shown first, checkpoints stored earlier), then the model view
// (your-model-view.mjs), with the whole view in the URL.
import { ModelView, modelViewCss } from './your-model-view.mjs';
import { download, planDownload, resolveSource } from './your-model-hub.mjs';
import { deleteStored, listStored, openStored } from './your-model-store.mjs';
import { parseYourModelHash, toYourModelHash } from './your-model-state.mjs';
import { registerServiceWorker } from '../common/service-worker.mjs';

const $ = (id) => document.getElementById(id);
const MB = (bytes) => (bytes < 0 ? 'unknown size' : `${(bytes / 1e6).toFixed(bytes < 1e7 ? 2 : 0)} MB`);
const sheet = new CSSStyleSheet();
sheet.replaceSync(modelViewCss);
document.adoptedStyleSheets = [...document.adoptedStyleSheets, sheet];

let { state, warnings } = parseYourModelHash(location.hash);
let plan = null, controller = null;

const view = new ModelView($('view'), {
  onState: (s) => {
    const typed = s.text !== state.text || s.pair !== state.pair || (s.output ?? '') !== state.output;
    state = { ...state, ...s };
    if (typed) writeHashSoon();
    else writeHash();
  },
  onReady: (ready) => { document.body.dataset.ready = String(ready); },
});

let hashTimer = 0;
function writeHash() {
  clearTimeout(hashTimer);
  const hash = toYourModelHash(state);
  if (location.hash !== hash) history.replaceState(null, '', hash);
}
// Typing writes the link once the text has been still for TYPING_PAUSE_MS, not on every keystroke:
// each history.replaceState keeps Chromium's browser process busy on the cores the keystroke's
// forward pass runs on (docs/performance.md, "Decisions in the pages"). Every other change (a head,
// a mode, a switched-off head) is written at once.
const TYPING_PAUSE_MS = 400;
function writeHashSoon() {
  clearTimeout(hashTimer);
  hashTimer = setTimeout(writeHash, TYPING_PAUSE_MS);
}

// The library's messages start with "multihead: ", which the page, being multihead, leaves out.
function say(message) {
  $('sourceMessage').textContent = message.replace(/^multihead: /, '');
}

async function open(files, label, modelId = '') {
  say('');
  $('viewSection').hidden = false;
  document.body.dataset.ready = 'false';
  // The view starts from the link's state (its first run uses it once the model is in).
  const { text, pair, pos, off, sel, mode, why, target, contrast, corrupt, patch, image, output, view: kind, avg } = state;
  view.setState({ text, pair, pos, off, sel, mode, why, target, contrast, corrupt, patch, image, output, view: kind, avg });
  try {
    await view.open(files, label, state.weights || undefined);
  } catch (error) {
    $('viewSection').hidden = true;
    say(`${label} could not be opened: ${error.message.replace(/^multihead: /, '')}`);
    document.body.dataset.ready = 'error';
    return;
  }
  state.model = modelId;
  writeHash();
  if (warnings.length) { view.ui.messages.textContent = warnings.join('\n'); warnings = []; }
}

// ---- local files ----

const describeFiles = (files) => {
  const folder = files.find((f) => f.webkitRelativePath)?.webkitRelativePath.split('/')[0];
  return folder || (files.length === 1 ? files[0].name : `${files.length} files`);
};

function openFiles(list) {
  const files = Array.from(list);
  if (!files.length) return;
  // One picture handed to an image model is its input, not a checkpoint.
  if (view.imageModel && files.length === 1 && files[0].type.startsWith('image/')) {
    view.imageView.showFile(files[0]);
    $('viewSection').scrollIntoView({ block: 'nearest' });
    return;
  }
  state.model = '';
  open(files, describeFiles(files));
}

$('files').addEventListener('change', (e) => openFiles(e.target.files));
$('folder').addEventListener('change', (e) => openFiles(e.target.files));

// A dropped folder arrives as a directory entry: read its files (one level, as a hub folder is).
async function filesOfEntry(entry) {
  if (entry.isFile) return [await new Promise((resolve, reject) => entry.file(resolve, reject))];
  if (!entry.isDirectory) return [];
  const reader = entry.createReader(), out = [];
  for (;;) {
    const batch = await new Promise((resolve, reject) => reader.readEntries(resolve, reject));
    if (!batch.length) break;
    for (const child of batch) if (child.isFile) out.push(await new Promise((resolve, reject) => child.file(resolve, reject)));
  }
  return out;
}
const drop = $('drop');
drop.addEventListener('dragover', (e) => { e.preventDefault(); drop.classList.add('over'); });
drop.addEventListener('dragleave', () => drop.classList.remove('over'));
drop.addEventListener('drop', async (e) => {
  e.preventDefault();
  drop.classList.remove('over');
  const entries = [...e.dataTransfer.items].map((item) => item.webkitGetAsEntry?.()).filter(Boolean);
  const files = entries.length ? (await Promise.all(entries.map(filesOfEntry))).flat() : [...e.dataTransfer.files];
  openFiles(files);
});

// ---- the hub ----

$('hubForm').addEventListener('submit', async (e) => {
  e.preventDefault();
  say('');
  const id = $('hubId').value.trim();
  if (!id) { say('Type a model id such as gpt2, or a URL of a checkpoint folder.'); return; }
  const stored = await openStored(id);
  if (stored) { open(stored, id, id); return; }
  let base;
  try { base = resolveSource(id); } catch (error) { say(error.message); return; }
  controller = new AbortController();
  $('hubLoad').disabled = true;
  say(`Asking ${new URL(base).host} for the files' sizes…`);
  try {
    plan = { id, ...(await planDownload(base, { signal: controller.signal })) };
    say('');
    $('confirmText').textContent = `${id}: ${plan.files.length} files, ${MB(plan.total)} (${plan.files.map((f) => `${f.name} ${MB(f.size)}`).join(', ')}), from ${new URL(base).host}.`;
    $('download').textContent = `Download ${MB(plan.total)}`;
    $('confirm').hidden = false;
    $('download').focus();
  } catch (error) {
    say(error.name === 'AbortError' ? 'Cancelled.' : error.message);
  } finally {
    $('hubLoad').disabled = false;
  }
});

$('cancelPlan').addEventListener('click', () => { $('confirm').hidden = true; plan = null; });

$('download').addEventListener('click', async () => {
  if (!plan) return;
  $('confirm').hidden = true;
  $('progressBox').hidden = false;
  controller = new AbortController();
  const { id } = plan;
  try {
    await download(id, plan, {
      signal: controller.signal,
      onProgress: ({ loaded, total, bytesPerSecond, secondsLeft, file }) => {
        $('progress').value = total > 0 ? loaded / total : 0;
        $('progressText').textContent = `${file}: ${MB(loaded)} of ${MB(total)} · ${MB(bytesPerSecond)}/s · ${Number.isFinite(secondsLeft) ? `${Math.ceil(secondsLeft)} s left` : '…'}`;
      },
    });
    $('progressBox').hidden = true;
    await renderStored();
    const files = await openStored(id);
    open(files, id, id);
  } catch (error) {
    $('progressBox').hidden = true;
    say(error.name === 'AbortError' ? 'Download cancelled; nothing was kept.' : error.message);
  }
  plan = null;
});

$('cancel').addEventListener('click', () => controller?.abort());

// ---- stored checkpoints ----

async function renderStored() {
  const stored = await listStored();
  $('storedBox').hidden = stored.length === 0;
  $('stored').replaceChildren(...stored.map(({ id, bytes }) => {
    const li = document.createElement('li');
    const openButton = Object.assign(document.createElement('button'), { type: 'button', textContent: `Open ${id}` });
    openButton.addEventListener('click', async () => open(await openStored(id), id, id));
    const remove = Object.assign(document.createElement('button'), { type: 'button', textContent: 'Delete' });
    remove.setAttribute('aria-label', `Delete ${id} from this browser`);
    remove.addEventListener('click', async () => { await deleteStored(id); renderStored(); });
    li.append(openButton, ` ${MB(bytes)} `, remove);
    return li;
  }));
}

// The weights' type applies to the next checkpoint opened, and lives in the URL with the rest.
$('weightType').addEventListener('change', () => { state.weights = $('weightType').value; writeHash(); });

async function start() {
  $('weightType').value = state.weights;
  await renderStored();
  document.body.dataset.ready = 'true';
  if (state.model) {
    $('hubId').value = state.model;
    const stored = await openStored(state.model);
    if (stored) open(stored, state.model, state.model);
    else say(`This link names the model ${state.model}: press Load to see its download size (nothing is fetched before).`);
  } else if (location.hash) {
    say('Local files cannot be kept in a link: drop or pick the checkpoint again to see this view.');
  }
}

window.addEventListener('hashchange', () => {
  if (location.hash === toYourModelHash(state)) return;
  ({ state, warnings } = parseYourModelHash(location.hash));
  $('weightType').value = state.weights;
  if (view.config) {
    const { text, pair, pos, off, sel, mode, why, target, contrast, corrupt, patch, image, output, view: kind, avg } = state;
    view.setState({ text, pair, pos, off, sel, mode, why, target, contrast, corrupt, patch, image, output, view: kind, avg });
  }
});

start();
registerServiceWorker();
