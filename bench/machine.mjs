// The machine a benchmark ran on, named precisely: the machines differ (Zen 3 and Zen 4 have
// both been seen), and a ratio means little without the CPU that produced it.
import { readFileSync } from 'node:fs';
import os from 'node:os';

export function machine() {
  let family = null, model = null, flags = [];
  try {
    const cpuinfo = readFileSync('/proc/cpuinfo', 'utf8');
    family = Number(/^cpu family\s*:\s*(\d+)/m.exec(cpuinfo)?.[1]);
    model = Number(/^model\s*:\s*(\d+)/m.exec(cpuinfo)?.[1]);
    flags = (/^flags\s*:\s*(.*)$/m.exec(cpuinfo)?.[1] ?? '').split(/\s+/);
  } catch { /* not Linux: the model name from os.cpus() is all there is */ }
  const simd = ['sse4_2', 'avx', 'avx2', 'fma', 'avx512f', 'avx512_bf16'].filter((f) => flags.includes(f));
  return {
    cpu: os.cpus()[0]?.model, family, model, simdFlags: simd.join(' ') || 'unknown',
    cores: os.cpus().length, memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    node: process.versions.node, v8: process.versions.v8, date: new Date().toISOString().slice(0, 10),
  };
}
