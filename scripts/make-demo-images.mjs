// Draws the "Your model" page's demo pictures (web/your-model/images/*.png) from nothing but
// shapes, so the project owns them outright (CC0, web/your-model/images/README.md). Deterministic:
// running it again writes the same bytes. Usage: node scripts/make-demo-images.mjs
import { writeFileSync } from 'node:fs';
import { deflateSync } from 'node:zlib';

const SIZE = 224;  // ViT's input: the page shows the picture as the model sees it

// ---- a minimal PNG writer (8-bit RGB, filter 0 on each row) ----
const CRC = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k += 1) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
function crc32(bytes) {
  let c = 0xffffffff;
  for (const b of bytes) c = CRC[(c ^ b) & 255] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}
function chunk(type, body) {
  const out = Buffer.alloc(12 + body.length);
  out.writeUInt32BE(body.length, 0);
  out.write(type, 4, 'latin1');
  Buffer.from(body).copy(out, 8);
  out.writeUInt32BE(crc32(out.subarray(4, 8 + body.length)), 8 + body.length);
  return out;
}
function png(rgb, width, height) {
  const raw = Buffer.alloc((width * 3 + 1) * height);
  for (let y = 0; y < height; y += 1) {
    // Filter 1 (Sub): flat colour areas become runs of zeros, which deflate packs tightly.
    raw[y * (width * 3 + 1)] = 1;
    for (let i = 0; i < width * 3; i += 1) {
      const v = rgb[y * width * 3 + i], left = i >= 3 ? rgb[y * width * 3 + i - 3] : 0;
      raw[y * (width * 3 + 1) + 1 + i] = (v - left) & 255;
    }
  }
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header[8] = 8; header[9] = 2;  // 8 bits, RGB
  return Buffer.concat([Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]), chunk('IHDR', header),
    chunk('IDAT', deflateSync(raw, { level: 9 })), chunk('IEND', Buffer.alloc(0))]);
}

// ---- drawing: each picture is a function (x, y) → [r, g, b], shapes painted back to front ----
const mix = (a, b, t) => a.map((v, i) => Math.round(v + (b[i] - v) * t));
const inEllipse = (x, y, cx, cy, rx, ry) => ((x - cx) / rx) ** 2 + ((y - cy) / ry) ** 2 <= 1;
function render(paint) {
  const rgb = new Uint8Array(SIZE * SIZE * 3);
  for (let y = 0; y < SIZE; y += 1) {
    for (let x = 0; x < SIZE; x += 1) rgb.set(paint(x + 0.5, y + 0.5), (y * SIZE + x) * 3);
  }
  return rgb;
}

// A tabby cat's face on a blue wall: the object in the middle, as in DINO's figures.
function cat(x, y) {
  let c = mix([70, 110, 160], [120, 160, 200], y / SIZE);
  if (y > 176) c = [150, 110, 70];  // the floor
  // An ear: the triangle (x0, 100), (x1, 100), tip (signs of the three edges' cross products).
  const side = (ax, ay, bx, by) => (bx - ax) * (y - ay) - (by - ay) * (x - ax);
  const ear = (x0, x1, [tx, ty]) => side(x0, 100, tx, ty) >= 0 && side(tx, ty, x1, 100) >= 0 && y <= 100;
  if (ear(62, 102, [70, 40]) || ear(122, 162, [154, 40])) c = [210, 130, 50];
  if (inEllipse(x, y, 112, 120, 66, 58)) {
    c = [225, 145, 60];
    if (Math.floor((x + 8) / 14) % 2 === 0 && y < 100 && Math.abs(x - 112) < 40) c = [170, 95, 35];  // stripes
    if (inEllipse(x, y, 88, 108, 12, 14) || inEllipse(x, y, 136, 108, 12, 14)) c = [90, 170, 70];  // eyes
    if (inEllipse(x, y, 88, 108, 3, 11) || inEllipse(x, y, 136, 108, 3, 11)) c = [15, 15, 15];
    if (inEllipse(x, y, 112, 135, 8, 6)) c = [230, 120, 140];  // nose
    if (inEllipse(x, y, 112, 150, 24, 12) && y > 145) c = [245, 220, 190];  // muzzle
  }
  return c;
}

// A red ball on grass under a sky with a sun: one object, small, off centre.
function ball(x, y) {
  let c = y < 140 ? mix([110, 170, 235], [200, 225, 250], y / 140) : mix([80, 160, 60], [40, 110, 35], (y - 140) / 84);
  if (inEllipse(x, y, 185, 40, 20, 20)) c = [255, 220, 80];
  if (inEllipse(x, y, 80, 150, 36, 36)) {
    const light = Math.max(0, 1 - Math.hypot(x - 68, y - 138) / 44);
    c = mix([150, 20, 25], [255, 120, 110], light);
    if (Math.abs(y - 150 + (x - 80) * 0.3) < 3) c = [245, 245, 240];  // a stripe
  }
  return c;
}

// Two boats on the sea under a cliff: several objects for heads to tell apart.
function boats(x, y) {
  let c = y < 120 ? mix([250, 200, 150], [150, 180, 220], 1 - y / 120) : mix([40, 90, 140], [20, 50, 90], (y - 120) / 104);
  if (y > 50 + (x * x) / 60) c = mix([120, 100, 80], [80, 65, 50], (y - 60) / 164);  // the cliff
  const hull = (cx, w) => y > 128 && y < 142 && Math.abs(x - cx) < w - (y - 128) * 0.8;
  const sail = (cx, h) => y < 126 && y > 126 - h && x > cx && x < cx + (y - (126 - h)) * 0.55;
  if (hull(120, 30) || hull(185, 20)) c = [120, 50, 30];
  if (sail(112, 70)) c = [245, 240, 225];
  if (sail(180, 45)) c = [230, 90, 60];
  if (y > 120 && y < 124 && x > 90 && (x - 40) % 37 < 10) c = [200, 220, 235];  // glints on the water
  return c;
}

for (const [name, paint] of Object.entries({ cat, ball, boats })) {
  const file = new URL(`../web/your-model/images/${name}.png`, import.meta.url);
  const bytes = png(render(paint), SIZE, SIZE);
  writeFileSync(file, bytes);
  console.log(`${file.pathname}: ${bytes.length} bytes`);
}
