// Named activations in JS (src/nn/hooks.h): run(ids, { capture, intervene }) resolves names and
// patterns against the model's hook names, tells the core which to read or write, and turns the
// data form of an intervention into the function the core calls.
import { describe, fail } from './checks.mjs';

// Levenshtein distance, for "did you mean" lists.
function distance(a, b) {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i += 1) {
    const row = [i];
    for (let j = 1; j <= b.length; j += 1) {
      row[j] = Math.min(previous[j] + 1, row[j - 1] + 1, previous[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = row;
  }
  return previous[b.length];
}

/** The names closest to `name` (at most `count`), for an error message. */
export function closestNames(name, names, count = 3) {
  return [...names].map((n) => [distance(name, n), n]).sort((a, b) => a[0] - b[0]).slice(0, count).map(([, n]) => n);
}

/**
 * The hook names a name or pattern means: '*' stands for any run of characters without a dot
 * ('blocks.*.hook_resid_post' is every layer's). A name or pattern that matches none is an Error
 * that lists the closest names.
 */
export function resolveHookNames(pattern, ids) {
  if (typeof pattern !== 'string' || pattern === '') fail(`a hook name must be a non-empty string, got ${describe(pattern)}`);
  if (!pattern.includes('*')) {
    if (!ids.has(pattern)) {
      fail(`there is no activation named "${pattern}" in this model; the closest are ${closestNames(pattern, ids.keys()).map((n) => `"${n}"`).join(', ')} ` +
        '(model.hookNames() lists them all)');
    }
    return [pattern];
  }
  const regex = new RegExp(`^${pattern.split('*').map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('[^.]*')}$`);
  const names = [...ids.keys()].filter((name) => regex.test(name));
  if (!names.length) {
    fail(`no activation of this model matches "${pattern}"; the closest names are ${closestNames(pattern.replaceAll('*', '0'), ids.keys()).map((n) => `"${n}"`).join(', ')}`);
  }
  return names;
}

// What an intervention's data form writes: { positions?, heads?, values }. values holds, for each
// position (default: every one) and each head (default: every one, for an activation laid out
// positions × heads × d_head), the rest of the activation's row.
function dataIntervention(name, spec) {
  const { positions, heads, values } = spec;
  if (!(values instanceof Float32Array || Array.isArray(values))) {
    fail(`intervene["${name}"] must be a function or { positions?, heads?, values }, with values a Float32Array or an array of numbers`);
  }
  return (activation) => {
    const { data, shape } = activation;
    const n = shape[0];
    const perHead = shape.length === 3;
    if (heads !== undefined && !perHead) fail(`intervene["${name}"].heads: this activation is not split by heads (shape ${JSON.stringify(shape)})`);
    const rows = positions ?? Array.from({ length: n }, (_, i) => i);
    const groups = heads ?? [null];
    const width = heads === undefined ? data.length / n : shape[2];
    const check = (list, count, what) => {
      if (!Array.isArray(list) || list.some((x) => !Number.isInteger(x) || x < 0 || x >= count)) {
        fail(`intervene["${name}"].${what} must be a list of ${what} from 0 to ${count - 1}`);
      }
    };
    if (positions !== undefined) check(positions, n, 'positions');
    if (heads !== undefined) check(heads, shape[1], 'heads');
    if (values.length !== rows.length * groups.length * width) {
      fail(`intervene["${name}"].values must hold ${rows.length} positions × ${heads === undefined ? '' : `${groups.length} heads × `}${width} numbers = ` +
        `${rows.length * groups.length * width}, got ${values.length} (the activation's shape is ${JSON.stringify(shape)})`);
    }
    let from = 0;
    for (const t of rows) {
      for (const h of groups) {
        const at = h === null ? t * width : (t * shape[1] + h) * width;
        for (let i = 0; i < width; i += 1) data[at + i] = values[from + i];
        from += width;
      }
    }
  };
}

/**
 * Marks the hooks a run reads (capture) and writes (intervene) in the core's modes (by hook id: 1
 * read, 2 write), and returns the function the core calls for written ones, with the error one of
 * them threw (thrown after the run, which finishes first: the core is never unwound).
 */
export function prepareHooks(modes, ids, writable, capture, intervene) {
  const captured = new Map();  // hook id → name
  const writers = new Map();   // hook id → [name, function]
  if (capture !== undefined) {
    if (!Array.isArray(capture)) fail(`capture must be a list of hook names or patterns, got ${describe(capture)}`);
    for (const pattern of capture) {
      for (const name of resolveHookNames(pattern, ids)) {
        captured.set(ids.get(name), name);
        modes[ids.get(name)] |= 1;
      }
    }
  }
  if (intervene !== undefined) {
    if (intervene === null || typeof intervene !== 'object' || Array.isArray(intervene)) {
      fail(`intervene must be an object from hook names (or patterns) to a function or { positions?, heads?, values }, got ${describe(intervene)}`);
    }
    for (const [pattern, spec] of Object.entries(intervene)) {
      const fn = typeof spec === 'function' ? spec : dataIntervention(pattern, spec ?? {});
      for (const name of resolveHookNames(pattern, ids)) {
        if (!writable(name)) {
          fail(`${name} can be captured but not changed: the attention's q, k, v, scores and pattern are computed inside its kernel; ` +
            'intervene on attn.hook_z, hook_attn_out, the residual streams, the norms or the MLP instead');
        }
        writers.set(ids.get(name), [name, fn]);
        modes[ids.get(name)] |= 2;
      }
    }
  }
  const state = { error: null };
  const callback = (id, view, shape) => {
    if (state.error) return;
    const [name, fn] = writers.get(id);
    const data = view.slice();
    try {
      fn({ name, data, shape: Array.from(shape) });
    } catch (error) {
      state.error = error;
      return;
    }
    if (view.length !== data.length) { state.error = new Error(`multihead: the ${name} intervention ran wasm code that moved the heap; change activation.data only`); return; }
    view.set(data);
  };
  return { captured, callback, state, any: captured.size > 0 || writers.size > 0 };
}
