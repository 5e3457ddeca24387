// The pages' small DOM and text helpers, once.

/** An element with properties and children: el('button', { type: 'button', textContent: 'Go' }). */
export const el = (tag, props = {}, ...children) => {
  const node = Object.assign(document.createElement(tag), props);
  node.append(...children);
  return node;
};

/** A probability (or a signed share) as a percentage: two digits from 10%, three below. */
export const pct = (p) => `${(p * 100).toFixed(Math.abs(p) >= 0.1 ? 0 : 1)}%`;

/** "L3 H5": layer and head counted from 1, as the pages label them. */
export const headName = (layer, head) => `L${layer + 1} H${head + 1}`;
