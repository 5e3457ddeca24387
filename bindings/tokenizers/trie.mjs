// A trie over UTF-16 code units, for every vocabulary entry that starts at a place in a string
// (Unigram's pieces), or the longest (SentencePiece's user-defined pieces). Edges live in one
// open-addressing hash table keyed by (node, code unit), in typed arrays: a 250,000-piece
// vocabulary is about a million edges, too many for an object or a Map per node.

export class CharTrie {
  constructor(expectedEdges = 1024) {
    let size = 1024;
    while (size < 2 * expectedEdges) size *= 2;
    this.#allocate(size);
    this.count = 0;  // edges
    this.nodes = 1;  // node 0 is the root
    this.values = new Int32Array(Math.max(16, expectedEdges + 1)).fill(-1);
    this.rootChild = new Int32Array(65536).fill(-1);  // the root's edges, looked up directly
  }

  #allocate(size) {
    this.mask = size - 1;
    this.parents = new Int32Array(size).fill(-1);
    this.codes = new Uint16Array(size);
    this.children = new Int32Array(size);
  }

  #slot(parent, code) {
    const h = Math.imul(parent ^ Math.imul(code, 0x85EBCA6B), 0x9E3779B1);
    return (h ^ (h >>> 15)) & this.mask;
  }

  /** The node under parent by code unit `code`, or -1. */
  child(parent, code) {
    if (parent === 0) return this.rootChild[code];
    const { parents, codes, mask } = this;
    for (let at = this.#slot(parent, code); ; at = (at + 1) & mask) {
      const p = parents[at];
      if (p === parent && codes[at] === code) return this.children[at];
      if (p === -1) return -1;
    }
  }

  #addChild(parent, code) {
    if (2 * (this.count + 1) > this.parents.length) this.#grow();
    const node = this.nodes;
    this.nodes += 1;
    if (node >= this.values.length) {
      const values = new Int32Array(2 * this.values.length).fill(-1);
      values.set(this.values);
      this.values = values;
    }
    if (parent === 0) this.rootChild[code] = node;
    else this.#put(parent, code, node);
    this.count += 1;
    return node;
  }

  #put(parent, code, node) {
    let at = this.#slot(parent, code);
    while (this.parents[at] !== -1) at = (at + 1) & this.mask;
    this.parents[at] = parent;
    this.codes[at] = code;
    this.children[at] = node;
  }

  #grow() {
    const { parents, codes, children } = this;
    this.#allocate(2 * parents.length);
    for (let at = 0; at < parents.length; at += 1) if (parents[at] !== -1) this.#put(parents[at], codes[at], children[at]);
  }

  /** Stores value (≥ 0) under key; a key stored twice keeps the last value. */
  set(key, value) {
    let node = 0;
    for (let k = 0; k < key.length; k += 1) {
      const code = key.charCodeAt(k);
      const next = this.child(node, code);
      node = next >= 0 ? next : this.#addChild(node, code);
    }
    if (node !== 0) this.values[node] = value;
  }

  /**
   * The longest key that text continues with at `from` (not past `to`): its length in code units,
   * with its value in this.found; 0 when none.
   */
  longestAt(text, from, to = text.length) {
    let node = 0, length = 0;
    for (let k = from; k < to; k += 1) {
      node = this.child(node, text.charCodeAt(k));
      if (node < 0) break;
      if (this.values[node] >= 0) { length = k + 1 - from; this.found = this.values[node]; }
    }
    return length;
  }
}
