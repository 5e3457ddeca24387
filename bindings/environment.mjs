// Where the API runs: Node (detected by process.versions.node, not by window, which jsdom defines).
export function inNode() {
  return typeof process === 'object' && process !== null && typeof process.versions?.node === 'string';
}
