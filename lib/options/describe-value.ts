/** Helpers the option and key checks share to word their errors. */

/**
 * A short, safe description of a value for error messages: never longer than a line, never calls a
 * throwing `toString`, never echoes a 10 MB string or Buffer.
 */
export function describeValue(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  if (typeof value === 'symbol' || typeof value === 'function') return `a ${typeof value}`;
  if (typeof value === 'bigint') return `${value}n (a bigint)`;
  if (value === null || typeof value !== 'object') return String(value);
  if (Buffer.isBuffer(value)) return `a Buffer of ${value.length} bytes`;
  if (Array.isArray(value)) return 'an array';
  try {
    const name = (value as { constructor?: { name?: unknown } }).constructor?.name;
    return typeof name === 'string' && name !== '' && name !== 'Object' ? `a ${name}` : 'an object';
  } catch {
    return 'an object';
  }
}

/** Whether a string holds half of a UTF-16 surrogate pair alone (not valid Unicode: Redis would store it mangled). */
export function hasLoneSurrogate(value: string): boolean {
  return /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(value);
}
