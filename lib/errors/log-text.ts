/**
 * Values a caller chose (a key built from a request, a token, a header) put into a log line or an
 * error message: quoted, escaped and cut, so a value can never start a line of its own, move the
 * cursor, reorder what a terminal shows, or swell a line. One form everywhere, JSON's string form
 * extended to the characters JSON leaves raw.
 */

/** Longest part of a value shown, in UTF-16 units; the rest is left out with the length said. */
const SHOWN = 200;

/**
 * What a log line must not carry raw: quotes and backslashes (they would end or bend the quoting),
 * C0 and C1 controls and DEL (newlines, escape sequences), the line and paragraph separators, the
 * bidirectional controls, and half of a surrogate pair alone.
 */
const UNSAFE =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is its purpose.
  /["\\\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

const SHORT: Readonly<Record<string, string>> = {
  '"': '\\"',
  '\\': '\\\\',
  '\n': '\\n',
  '\r': '\\r',
  '\t': '\\t',
};

function escaped(char: string): string {
  return SHORT[char] ?? `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`;
}

/** `value` in double quotes, escaped, and cut after `shown` units with its full length said. */
export function quote(value: string, shown = SHOWN): string {
  if (value.length <= shown) return `"${value.replace(UNSAFE, escaped)}"`;
  // Not between the halves of a pair: a lone half would be shown escaped, as if the value had one.
  const end = /[\ud800-\udbff]/.test(value[shown - 1]) ? shown - 1 : shown;
  return `"${value.slice(0, end).replace(UNSAFE, escaped)}"… (${value.length} characters)`;
}

/** The first `shown` of `values`, each quoted, then how many there are in all if more. */
export function quoteList(values: readonly string[], shown = 5): string {
  const listed = values.slice(0, shown).map((value) => quote(value));
  return values.length > shown ? `${listed.join(', ')}, … (${values.length} in all)` : listed.join(', ');
}
