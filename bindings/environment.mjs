// Where the API runs: Node (detected by process.versions.node, not by window, which jsdom defines).
export function inNode() {
  return typeof process === 'object' && process !== null && typeof process.versions?.node === 'string';
}

// Resolves after the event loop has had one turn: other tasks (a page's drawing, a worker's next
// message) run, but no timer is waited for. setTimeout(0) is clamped to 4 ms once timers nest in
// browsers, a third of a small model's decoding step. Node: setImmediate (after pending I/O and
// timers). Browsers and workers: a message to ourselves over one MessageChannel, a task queued
// behind the ones already waiting.
let channel = null;
const waiting = [];
export function nextTurn() {
  if (typeof setImmediate === 'function') return new Promise((resolve) => setImmediate(resolve));
  if (typeof MessageChannel !== 'function') return new Promise((resolve) => setTimeout(resolve, 0));
  if (!channel) {
    channel = new MessageChannel();
    channel.port1.onmessage = () => waiting.shift()?.();
  }
  return new Promise((resolve) => {
    waiting.push(resolve);
    channel.port2.postMessage(null);
  });
}

// A generator's clock for those turns: due() is true after its first token and then whenever the
// last turn is at least `everyMs` ago. A turn costs ~0.1 ms (a small model's decoding step is half
// that), so a generator turns every few milliseconds rather than after every token: a page still
// draws every frame, and a worker hears "stop" within `everyMs` and a step.
export const TURN_EVERY_MS = 5;
export function turnClock(everyMs = TURN_EVERY_MS) {
  let last = -Infinity;
  return {
    due: () => performance.now() - last >= everyMs,
    async turn() {
      await nextTurn();
      last = performance.now();
    },
  };
}
