// The names of 0.1 that 0.2 renamed (CHANGELOG.md): they keep working for this release, as
// getters (results, configs) or as accepted options, marked @deprecated in multihead.d.ts. No
// console message: a page that embeds the widget should not see one for a library's rename.

/**
 * Adds the old names to a config as non-enumerable getters of the new ones (a config lists and
 * prints its names once); aliases: { oldName: 'newName' }. A result's old name is a plain property
 * holding the same array instead, set where the result is made: { ...result } keeps it, and it
 * costs nothing on a call that takes microseconds.
 */
export function withOldNames(object, aliases) {
  for (const [old, now] of Object.entries(aliases)) {
    Object.defineProperty(object, old, {
      get() { return object[now]; },
      enumerable: false,
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
