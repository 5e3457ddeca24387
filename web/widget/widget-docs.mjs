// The widget documentation page: shows each example's markup and wires the events example.
import { tokenize } from '../attention/tokens.mjs';

for (const example of document.querySelectorAll('.example')) {
  const widget = example.querySelector('multihead-attention');
  if (!widget) continue;
  const pre = document.createElement('pre');
  const code = document.createElement('code');
  const attrs = [...widget.attributes].filter((a) => a.name !== 'class' || true).map((a) => (a.value === '' ? ` ${a.name}` : ` ${a.name}="${a.value}"`)).join('');
  code.textContent = `<multihead-attention${attrs}></multihead-attention>`;
  pre.appendChild(code);
  widget.after(pre);
}

const widget = document.getElementById('events-widget');
const hostText = document.getElementById('host-text');
const log = document.getElementById('event-log');
const words = tokenize(widget.getAttribute('sentence'));
hostText.replaceChildren(...words.flatMap((w, i) => [Object.assign(document.createElement('span'), { className: 'token', textContent: w, id: `host-token-${i}` }), document.createTextNode(' ')]));
widget.addEventListener('attention-hover', (e) => {
  const { head, query, key, queryToken, keyToken, weight } = e.detail;
  hostText.querySelectorAll('.token').forEach((span, i) => {
    span.classList.toggle('query', i === query);
    span.classList.toggle('key', i === key);
  });
  log.textContent = `attention-hover: head ${head}, “${queryToken}” → “${keyToken}” = ${weight.toFixed(4)}`;
});
widget.addEventListener('head-select', (e) => { log.textContent = `head-select: head ${e.detail.head}`; });
