// A small PNG reader for the tests (8-bit greyscale, RGB, RGBA, grey + alpha; not interlaced),
// from the PNG specification with node:zlib's inflate: → { data: RGBA bytes, width, height },
// ImageData's shape.
import { inflateSync } from 'node:zlib';

const CHANNELS = { 0: 1, 2: 3, 4: 2, 6: 4 };  // colour type → samples a pixel

// The Paeth predictor (PNG spec, 9.4): whichever of left, up, up-left is nearest to left + up − up-left.
function paeth(a, b, c) {
  const p = a + b - c, pa = Math.abs(p - a), pb = Math.abs(p - b), pc = Math.abs(p - c);
  return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

export function readPng(bytes) {
  const signature = [137, 80, 78, 71, 13, 10, 26, 10];
  if (signature.some((b, i) => bytes[i] !== b)) throw new Error('not a PNG file');
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let at = 8, width = 0, height = 0, depth = 0, colour = 0, interlace = 0;
  const idat = [];
  while (at < bytes.length) {
    const length = view.getUint32(at), type = String.fromCharCode(...bytes.subarray(at + 4, at + 8));
    const body = bytes.subarray(at + 8, at + 8 + length);
    if (type === 'IHDR') {
      width = view.getUint32(at + 8); height = view.getUint32(at + 12);
      [depth, colour] = [body[8], body[9]];
      interlace = body[12];
    } else if (type === 'IDAT') {
      idat.push(body);
    } else if (type === 'IEND') {
      break;
    }
    at += 12 + length;
  }
  const channels = CHANNELS[colour];
  if (depth !== 8 || !channels || interlace) throw new Error(`PNG with depth ${depth}, colour type ${colour}, interlace ${interlace} is not read here`);
  const raw = inflateSync(Buffer.concat(idat));
  const stride = width * channels, pixels = new Uint8Array(stride * height);
  for (let y = 0; y < height; y += 1) {
    const filter = raw[y * (stride + 1)], line = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    for (let i = 0; i < stride; i += 1) {
      const a = i >= channels ? pixels[y * stride + i - channels] : 0;
      const b = y > 0 ? pixels[(y - 1) * stride + i] : 0;
      const c = i >= channels && y > 0 ? pixels[(y - 1) * stride + i - channels] : 0;
      const predicted = [0, a, b, (a + b) >> 1, paeth(a, b, c)][filter];
      if (predicted === undefined) throw new Error(`PNG filter type ${filter} does not exist`);
      pixels[y * stride + i] = (line[i] + predicted) & 255;
    }
  }
  const data = new Uint8ClampedArray(width * height * 4);
  for (let p = 0; p < width * height; p += 1) {
    const s = pixels.subarray(p * channels, (p + 1) * channels);
    const [r, g, b, alpha] = channels === 1 ? [s[0], s[0], s[0], 255] : channels === 2 ? [s[0], s[0], s[0], s[1]]
      : channels === 3 ? [s[0], s[1], s[2], 255] : [s[0], s[1], s[2], s[3]];
    data.set([r, g, b, alpha], p * 4);
  }
  return { data, width, height };
}
