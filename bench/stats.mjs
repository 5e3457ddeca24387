// The statistics every benchmark here reports: medians, and ratios taken within a round of
// interleaved calls.

// The q-quantile of xs: element ⌊q·count⌋ of them sorted (q = 0.5: the upper median), or null for none.
export const quantile = (xs, q) => (xs.length ? [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))] : null);
// The median of xs (the upper one of an even count), or null for none.
export const median = (xs) => quantile(xs, 0.5);

// { name: [ms of each round] } → { name: median ms }.
export const medians = (times) => Object.fromEntries(Object.entries(times).map(([name, t]) => [name, median(t)]));

// The median (or q-quantile) over rounds of peer's time ÷ ours in the same round, or null if either
// was not timed.
// The calls of a round run back to back, so a stretch of the shared machine running slow (on a
// 2-core Zen 3 the GEMM lost 25–35% for 0.1–0.3 s at a time while a register-only loop did not)
// weighs on both sides of each ratio.
export function pairedRatio(times, ours, peer, q = 0.5) {
  if (!times?.[ours] || !times?.[peer]) return null;
  return quantile(times[ours].map((t, i) => times[peer][i] / t), q);
}
