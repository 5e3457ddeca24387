// The argument checks every class of the API shares: each throws an Error that says what to pass.
// Numeric rules of the models themselves (valid configs, finite values, memory) are the C++
// core's; these only check shapes and types before anything is copied into the wasm heap.

/** The longest sequence (queries or keys) one call accepts (the core's kMaxTokens). */
export const MAX_TOKENS = 16384;

export function fail(message) {
  throw new Error(`multihead: ${message}`);
}

export function describe(value) {
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  if (ArrayBuffer.isView(value)) return `a ${value.constructor.name} of length ${value.length}`;
  if (Array.isArray(value)) return `an array of length ${value.length}`;
  if (value !== null && typeof value === 'object') return value.constructor?.name ?? 'an object';
  return String(value);
}

export function checkObject(name, value) {
  if (value === null || typeof value !== 'object') fail(`${name} must be an object, got ${describe(value)}`);
  return value;
}

export function checkInteger(name, value, { min = -(2 ** 31), max = 2 ** 31 - 1 } = {}) {
  if (!Number.isInteger(value) || value < min || value > max) {
    fail(`${name} must be an integer from ${min} to ${max}, got ${describe(value)}`);
  }
  return value;
}

export function checkNumber(name, value) {
  if (typeof value !== 'number' || Number.isNaN(value)) fail(`${name} must be a number, got ${describe(value)}`);
  return value;
}

export function isArrayOfNumbers(value) {
  return (ArrayBuffer.isView(value) && !(value instanceof DataView) && typeof value.length === 'number'
    && !(value instanceof BigInt64Array) && !(value instanceof BigUint64Array)) || Array.isArray(value);
}

export function checkArray(name, value, expectedLength, shape) {
  if (!isArrayOfNumbers(value)) fail(`${name} must be a Float32Array (or an array of numbers), got ${describe(value)}`);
  if (value.length !== expectedLength) {
    fail(`${name} has ${value.length} values but must have ${expectedLength} (${shape})`);
  }
  return value;
}

// Rows of a flat row-major matrix: with `rows` given the length must match; without, infer it.
export function rowsOf(name, value, width, rows, rowsName) {
  if (!isArrayOfNumbers(value)) fail(`${name} must be a Float32Array (or an array of numbers), got ${describe(value)}`);
  if (rows === undefined) {
    if (value.length === 0 || value.length % width !== 0) {
      fail(`${name} has ${value.length} values, which is not a whole, non-zero number of rows of ` +
        `dModel = ${width}: pass ${rowsName} × dModel values, row-major`);
    }
    return value.length / width;
  }
  checkInteger(rowsName, rows, { min: 1, max: MAX_TOKENS });
  checkArray(name, value, rows * width, `${rowsName} × dModel = ${rows} × ${width}`);
  return rows;
}

/** Token ids (Int32Array, Uint32Array or integers), each in 0 … vocabSize − 1. */
export function checkTokenIds(ids, vocabSize) {
  if (!(ids instanceof Int32Array || Array.isArray(ids) || ids instanceof Uint32Array)) {
    fail(`token ids must be an Int32Array or an array of integers, got ${describe(ids)}`);
  }
  for (let i = 0; i < ids.length; i += 1) {
    const id = ids[i];
    if (!Number.isInteger(id) || id < 0 || id >= vocabSize) {
      fail(`token id ${id} at position ${i} is not in the vocabulary (0 … ${vocabSize - 1})`);
    }
  }
  return ids;
}

/** Sets enabled[layer · heads + head] = 0 for each [layer, head] pair of disabledHeads. */
export function switchOffHeads(enabled, disabledHeads, layers, heads, value = 0) {
  if (!Array.isArray(disabledHeads)) fail(`disabledHeads must be an array of [layer, head] pairs, got ${describe(disabledHeads)}`);
  for (const pair of disabledHeads) {
    const [layer, head] = Array.isArray(pair) ? pair : [];
    if (!Number.isInteger(layer) || !Number.isInteger(head) || layer < 0 || layer >= layers || head < 0 || head >= heads) {
      fail(`disabledHeads entries must be [layer, head] with layer 0 … ${layers - 1} and head 0 … ${heads - 1}, got ${JSON.stringify(pair)}`);
    }
    enabled[layer * heads + head] = value;
  }
}

/** A method's options object: undefined or null mean none; anything else but an object is an Error. */
export function optionsOf(options, method) {
  if (options === undefined || options === null) return {};
  if (typeof options !== 'object' || Array.isArray(options)) fail(`${method}() takes an options object, got ${describe(options)}`);
  return options;
}

/** The Error a cancelled call rejects with (as fetch's): name 'AbortError'. */
export const abortError = (what) => Object.assign(new Error(`multihead: ${what} was cancelled`), { name: 'AbortError' });
