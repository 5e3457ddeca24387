// The names of 0.1 that 0.2 renamed (CHANGELOG.md): they keep working for this release, as
// getters (results, configs) or as accepted options, marked @deprecated in multihead.d.ts. No
// console message: a page that embeds the widget should not see one for a library's rename.

/**
 * Adds the old names to a result or config object as getters of the new ones; aliases: { oldName:
 * 'newName' }. A result's old names are enumerable, so that { ...result } keeps them (the same
 * arrays, not copies); a config's are not, so that it lists and prints its names once.
 */
export function withOldNames(object, aliases, { enumerable = true } = {}) {
  for (const [old, now] of Object.entries(aliases)) {
    Object.defineProperty(object, old, {
      get() { return object[now]; },
      enumerable,
      configurable: false,
    });
  }
  return object;
}

/** A copy of options with each old key given under its new name (both given: an Error, unless equal). */
export function renameOptions(options, aliases, fail) {
  let renamed = options;
  for (const [old, now] of Object.entries(aliases)) {
    if (options[old] === undefined) continue;
    if (options[now] !== undefined && options[now] !== options[old]) {
      fail(`options ${old} (deprecated) and ${now} disagree: pass ${now} only`);
    }
    if (renamed === options) renamed = { ...options };
    renamed[now] = options[old];
    delete renamed[old];
  }
  return renamed;
}
