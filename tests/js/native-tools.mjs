// The native tools the parity tests compare the wasm build against (npm run build:native, or the
// build MULTIHEAD_NATIVE_DIR names: npm test uses the sanitizer build's). Under npm test
// (MULTIHEAD_REQUIRE_NATIVE=1) a missing tool fails its test instead of skipping it, so a parity
// test cannot pass by not running; a bare `npx vitest` without the native build skips them.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';

export function nativeTool(name) {
  const path = join(process.cwd(), process.env.MULTIHEAD_NATIVE_DIR ?? 'build/native', name);
  const skip = process.env.MULTIHEAD_REQUIRE_NATIVE !== '1' && !existsSync(path);
  const check = () => expect(existsSync(path), `${path} is missing: build it (npm run build:native, or npm test's sanitizer build)`).toBe(true);
  return { path, skip, check };
}
