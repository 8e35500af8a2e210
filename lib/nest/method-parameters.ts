/**
 * How many arguments a method can receive, read from its declaration. `fn.length` stops at the first
 * parameter with a default value, so the parameter list in the method's source is counted instead; a
 * rest parameter receives any number. Used at start-up to refuse a key template that reads an argument
 * the method can never receive (`'order:<3.id>'` on a one-parameter method).
 *
 * What it cannot see (a method that reads `arguments`, a source it cannot parse) counts as "any number":
 * the check only ever refuses what is certainly wrong.
 */

/** The number of parameters `fn` declares, defaults included; Infinity with a rest parameter. */
export function parameterCapacity(fn: (...args: never[]) => unknown): number {
  let source: string;
  try {
    source = Function.prototype.toString.call(fn);
  } catch {
    return Number.POSITIVE_INFINITY;
  }
  // A built-in or bound function shows no parameter list to read.
  if (source.includes('[native code]')) return Number.POSITIVE_INFINITY;
  const entries = parameterEntries(source);
  if (entries === undefined) return Number.POSITIVE_INFINITY;
  if (entries.some((entry) => entry.startsWith('...'))) return Number.POSITIVE_INFINITY;
  return Math.max(entries.length, fn.length);
}

/**
 * The names of the simple parameters `fn` declares, in order (a destructured or rest one gives ''), or
 * none when its source cannot be read. For messages that name what a template probably meant.
 */
export function parameterNames(fn: (...args: never[]) => unknown): string[] {
  let source: string;
  try {
    source = Function.prototype.toString.call(fn);
  } catch {
    return [];
  }
  const entries = parameterEntries(source) ?? [];
  return entries.map((entry) => /^([A-Za-z_$][\w$]*)\s*(=|$)/.exec(entry)?.[1] ?? '');
}

const OPEN = '([{';
const CLOSE = ')]}';

/**
 * The top-level entries of the first parameter list in `source` (a method, function or arrow), trimmed,
 * or undefined when it cannot be found. Strings, template literals, comments and nested brackets (in
 * default values and destructuring) are skipped over, so only the list's own commas split it.
 */
function parameterEntries(source: string): string[] | undefined {
  let from = 0;
  // A computed method name (`[Symbol.iterator](...)`) comes before the list: skip it.
  const firstBracket = source.search(/[[(]/);
  if (firstBracket < 0) return undefined;
  if (source[firstBracket] === '[') {
    const end = groupEnd(source, firstBracket);
    if (end === undefined) return undefined;
    from = end;
  }
  const open = source.indexOf('(', from);
  const close = open < 0 ? undefined : groupEnd(source, open);
  if (close === undefined) return undefined;
  const entries: string[] = [];
  let start = open + 1;
  scanCode(source, open + 1, close - 1, (c, j, depth) => {
    if (c === ',' && depth === 0) {
      entries.push(source.slice(start, j));
      start = j + 1;
    }
    return false;
  });
  entries.push(source.slice(start, close - 1));
  // `()` has no entries, a trailing comma leaves an empty last one, and a comment is not a parameter.
  return entries
    .map((entry) => entry.replace(/\/\*[\s\S]*?\*\/|\/\/[^\n]*/g, '').trim())
    .filter((entry) => entry !== '');
}

/** The index just past the bracket group opening at `open`, or undefined when unbalanced. */
function groupEnd(source: string, open: number): number | undefined {
  let end: number | undefined;
  scanCode(source, open, source.length, (c, j, depth) => {
    if (CLOSE.includes(c) && depth === 0) end = j + 1;
    return end !== undefined;
  });
  return end;
}

/**
 * Calls `visit` for each character of code in [from, to), skipping strings, template literals and
 * comments, with the bracket depth after it (relative to `from`); stops when `visit` returns true.
 */
function scanCode(
  source: string,
  from: number,
  to: number,
  visit: (c: string, j: number, depth: number) => boolean,
): void {
  let depth = 0;
  for (let j = from; j < to; j++) {
    const skipped = skipLiteral(source, j);
    if (skipped !== j) {
      j = skipped - 1;
      continue;
    }
    const c = source[j];
    if (OPEN.includes(c)) depth++;
    else if (CLOSE.includes(c)) depth--;
    if (visit(c, j, depth)) return;
  }
}

/** If a string, template literal or comment starts at `j`, the index just past it; else `j`. */
function skipLiteral(source: string, j: number): number {
  const c = source[j];
  if (c === '"' || c === "'" || c === '`') {
    for (let k = j + 1; k < source.length; k++) {
      if (source[k] === '\\') k++;
      else if (source[k] === c) return k + 1;
    }
    return source.length;
  }
  if (c === '/' && source[j + 1] === '*') {
    const end = source.indexOf('*/', j + 2);
    return end < 0 ? source.length : end + 2;
  }
  if (c === '/' && source[j + 1] === '/') {
    const end = source.indexOf('\n', j + 2);
    return end < 0 ? source.length : end + 1;
  }
  return j;
}
