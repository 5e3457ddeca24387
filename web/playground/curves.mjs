// Training curves on a canvas: a few series of (step, value) points with axes, redrawn on every
// report. Long runs are averaged into at most one point per pixel column, so a 50,000-step curve
// costs the same as a 500-step one.

const FONT = '11px system-ui, sans-serif';

/** Means of ys over equal ranges of xs: at most `buckets` points (xs ascending). */
export function bucketMeans(xs, ys, buckets) {
  const n = xs.length;
  if (n <= buckets) return { xs: Array.from(xs), ys: Array.from(ys) };
  const outX = [], outY = [];
  for (let b = 0; b < buckets; b++) {
    const lo = Math.floor((b * n) / buckets), hi = Math.floor(((b + 1) * n) / buckets);
    let sx = 0, sy = 0;
    for (let i = lo; i < hi; i++) { sx += xs[i]; sy += ys[i]; }
    outX.push(sx / (hi - lo));
    outY.push(sy / (hi - lo));
  }
  return { xs: outX, ys: outY };
}

/**
 * series: [{ xs, ys, color, label, width? }]; y axis from yMin to yMax (log scale when yLog);
 * x axis from 0 to xMax steps. Optional target: a dashed horizontal line at that y.
 */
export function drawCurves(canvas, { series, xMax, yMin, yMax, yLog = false, yFormat = (v) => String(v), target = null }) {
  const dpr = window.devicePixelRatio || 1;
  const cssWidth = canvas.clientWidth || 300, cssHeight = canvas.clientHeight || 150;
  if (canvas.width !== Math.round(cssWidth * dpr) || canvas.height !== Math.round(cssHeight * dpr)) {
    canvas.width = Math.round(cssWidth * dpr);
    canvas.height = Math.round(cssHeight * dpr);
  }
  const ctx = canvas.getContext('2d');
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, cssWidth, cssHeight);
  const ink = getComputedStyle(canvas).color;
  const left = 40, right = 8, top = 8, bottom = 20;
  const w = cssWidth - left - right, h = cssHeight - top - bottom;
  const fy = (v) => (yLog ? Math.log(v) : v);
  const lo = fy(yMin), hi = fy(yMax);
  const x = (step) => left + (w * step) / Math.max(1, xMax);
  const y = (v) => top + h * (1 - (fy(Math.min(yMax, Math.max(yMin, v))) - lo) / (hi - lo));

  ctx.font = FONT;
  ctx.fillStyle = ink;
  ctx.strokeStyle = ink;
  ctx.globalAlpha = 0.35;
  ctx.lineWidth = 1;
  ctx.beginPath();
  ctx.moveTo(left, top); ctx.lineTo(left, top + h); ctx.lineTo(left + w, top + h);
  ctx.stroke();
  ctx.globalAlpha = 0.8;
  ctx.textAlign = 'right';
  ctx.textBaseline = 'middle';
  const ticks = yLog ? logTicks(yMin, yMax) : [yMin, (yMin + yMax) / 2, yMax];
  for (const t of ticks) ctx.fillText(yFormat(t), left - 4, y(t));
  ctx.textAlign = 'center';
  ctx.textBaseline = 'top';
  ctx.fillText('0', left, top + h + 4);
  ctx.fillText(`${Math.round(xMax).toLocaleString('en')} steps`, left + w - 30, top + h + 4);
  if (target !== null) {
    ctx.setLineDash([4, 4]);
    ctx.globalAlpha = 0.5;
    ctx.beginPath();
    ctx.moveTo(left, y(target)); ctx.lineTo(left + w, y(target));
    ctx.stroke();
    ctx.setLineDash([]);
  }
  ctx.globalAlpha = 1;
  for (const s of series) {
    if (!s.xs.length) continue;
    const pts = bucketMeans(s.xs, s.ys, Math.max(2, Math.floor(w)));
    ctx.strokeStyle = s.color;
    ctx.lineWidth = s.width ?? 1.5;
    ctx.beginPath();
    pts.xs.forEach((sx, i) => (i ? ctx.lineTo(x(sx), y(pts.ys[i])) : ctx.moveTo(x(sx), y(pts.ys[i]))));
    ctx.stroke();
  }
}

function logTicks(lo, hi) {
  const ticks = [];
  for (let p = Math.ceil(Math.log10(lo)); p <= Math.floor(Math.log10(hi)); p++) ticks.push(10 ** p);
  return ticks.length ? ticks : [lo, hi];
}
