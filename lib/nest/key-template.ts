/**
 * Lock key templates: `'order:<0>'`, `'transfer:<1.from.id>'`, or a function of the arguments. A
 * template is compiled once, when the decorator runs, so a malformed one fails at start-up; resolving it
 * against one call's arguments never yields a silent `order:undefined`: every doubtful value is a
 * LockUsageError (LOCK_INVALID_KEY) that names the method and the template.
 */
import { keyError, LockUsageError } from '../errors/lock-usage.error';
import { describeValue, hasLoneSurrogate } from '../options/describe-value';
import { MAX_KEY_LENGTH, validateKey } from '../options/lock-keys';

/**
 * A key as a function of the method's arguments, for anything a template cannot express; an array of
 * keys locks them all. `A` is its parameter list; the default, `never[]`, admits every key function.
 */
export type LockKeyFunction<A extends unknown[] = never[]> = (...args: A) => string | readonly string[];

/**
 * What `@Locked` accepts as its key: a template string, an array of them (every key locked, all or
 * nothing), or a key function taking the parameters `A`.
 */
export type LockKeyTemplate<A extends unknown[] = never[]> = string | readonly string[] | LockKeyFunction<A>;

/** Turns one call's arguments into a lock key, or several; throws LockUsageError (LOCK_INVALID_KEY). */
export type KeyResolver = (args: readonly unknown[]) => string | string[];

type Part = string | { index: number; path: readonly string[]; source: string };

/** `<n>` or `<n.a.b>`: an argument index, then property names (letters, digits, `_`, `$`). */
const PLACEHOLDER = /<([^<>]*)>/g;
const SEGMENT = /^[A-Za-z_$][\w$]*$|^\d+$/;
/** Property names that would reach into prototypes rather than the argument's own data. */
const FORBIDDEN = new Set(['__proto__', 'prototype', 'constructor']);

/**
 * Compiles a template for the method called `where` (e.g. `OrdersService.pay`). Throws LockUsageError
 * when the template itself is malformed.
 */
export function compileKeyTemplate(template: unknown, where: string): KeyResolver {
  if (typeof template === 'function') return functionResolver(template as LockKeyFunction, where);
  if (Array.isArray(template)) {
    if (template.length === 0) {
      throw keyError(
        `@Locked([]) on ${where}: the array of key templates is empty; give one per key, as in ` +
          "['account:<0.from>', 'account:<0.to>'].",
      );
    }
    const resolvers = template.map((element, i) => {
      if (typeof element !== 'string') {
        throw keyError(
          `@Locked([...]) on ${where}: element [${i}] must be a template string such as 'account:<0>', got ` +
            `${describeValue(element)}.`,
        );
      }
      return compileKeyTemplate(element, where) as (args: readonly unknown[]) => string;
    });
    return (args) => resolvers.map((resolver) => resolver(args));
  }
  if (typeof template !== 'string') {
    throw keyError(
      `@Locked() on ${where}: the key must be a template string such as 'order:<0>' or a function of the ` +
        `arguments, got ${typeof template}.`,
    );
  }
  const parts = parse(template, where);
  return (args) => resolve(parts, args, template, where);
}

function parse(template: string, where: string): Part[] {
  // A runaway template must not become a runaway message.
  const shown = template.length > 80 ? `${template.slice(0, 80)}…` : template;
  const fail = (why: string): never => {
    throw keyError(`@Locked('${shown}') on ${where}: ${why}`);
  };
  if (template.length === 0) fail('the template is empty; give a key such as "order:<0>".');
  const parts: Part[] = [];
  let last = 0;
  for (const match of template.matchAll(PLACEHOLDER)) {
    parts.push(template.slice(last, match.index));
    const source = match[1].trim();
    const [first, ...path] = source.split('.');
    if (!/^\d+$/.test(first ?? '')) {
      fail(`<${match[1]}> must start with an argument index, as in <0> or <1.id>.`);
    }
    for (const segment of path) {
      if (!SEGMENT.test(segment) || FORBIDDEN.has(segment)) {
        fail(`<${match[1]}> has an invalid property name "${segment}".`);
      }
    }
    parts.push({ index: Number(first), path, source });
    last = (match.index ?? 0) + match[0].length;
  }
  parts.push(template.slice(last));
  for (const part of parts) {
    if (typeof part !== 'string') continue;
    if (/[<>]/.test(part)) fail('it has an unmatched "<" or ">".');
    if (/[{}]/.test(part)) fail('braces would break the {key} hash tag; remove them.');
    if (hasLoneSurrogate(part)) fail('it contains a lone surrogate; a key must be well-formed Unicode.');
  }
  // The fixed text alone already over the limit would fail on every call: say so at definition.
  const fixed = parts.reduce((n, part) => n + (typeof part === 'string' ? part.length : 0), 0);
  if (fixed > MAX_KEY_LENGTH) {
    fail(
      `its fixed text is ${fixed} characters, over the ${MAX_KEY_LENGTH}-character key limit; hash long inputs.`,
    );
  }
  return parts.filter((part) => part !== '');
}

function resolve(parts: readonly Part[], args: readonly unknown[], template: string, where: string): string {
  let key = '';
  for (const part of parts) {
    if (typeof part === 'string') {
      key += part;
      continue;
    }
    const fail = (why: string): never => {
      const detail = `<${part.source}> ${why}`;
      throw keyError(`@Locked('${template}') on ${where}: ${detail}`, { detail });
    };
    if (part.index >= args.length) fail(`refers to argument ${part.index}, but the call had ${args.length}.`);
    let value = args[part.index];
    let at = String(part.index);
    for (const segment of part.path) {
      if (value === null || value === undefined) fail(`is ${value} at ${at}.`);
      try {
        value = (value as Record<string, unknown>)[segment];
      } catch (error) {
        throw keyError(`@Locked('${template}') on ${where}: reading ${at}.${segment} threw.`, {
          cause: error,
          detail: `<${part.source}>: reading ${at}.${segment} failed.`,
        });
      }
      at += `.${segment}`;
    }
    const text = scalar(value, fail);
    // Checked here, not only on the whole key below: the client learns which of its values broke it.
    if (/[{}]/.test(text)) fail(HOLDS_BRACE);
    if (hasLoneSurrogate(text)) fail(HOLDS_LONE_SURROGATE);
    key += text;
  }
  if (key.length > MAX_KEY_LENGTH) {
    const from = parts.filter((part) => typeof part !== 'string').map((part) => `<${part.source}>`);
    const detail =
      `the key built from ${from.join(', ')} is ${key.length} characters, over the ${MAX_KEY_LENGTH}-character ` +
      'limit of a lock key.';
    throw keyError(`@Locked('${template}') on ${where}: ${detail}`, { detail });
  }
  return checked(key, where, template);
}

function scalar(value: unknown, fail: (why: string) => never): string {
  switch (typeof value) {
    case 'string':
      if (value.length === 0) fail('is an empty string.');
      return value;
    case 'number':
      if (!Number.isFinite(value)) fail(`is ${value}, not a usable key part.`);
      return String(value);
    case 'bigint':
    case 'boolean':
      return String(value);
    case 'undefined':
      return fail('is undefined.');
    case 'object':
      return fail(
        value === null
          ? 'is null.'
          : `is ${Array.isArray(value) ? 'an array' : 'an object'}; point at a string or number inside it, as in <0.id>.`,
      );
    default:
      return fail(`is a ${typeof value}, not a string or number.`);
  }
}

function functionResolver(fn: LockKeyFunction, where: string): KeyResolver {
  return (args) => {
    let key: unknown;
    try {
      key = (fn as (...args: unknown[]) => unknown)(...args);
    } catch (error) {
      // A refusal the function means (an HttpException: 400, 404…) answers the request as it says.
      if (isHttpException(error)) throw error;
      // Anything else is a fault of the application's code, a 500 with its stack in the log. The cause's
      // own words lead the way to the fix: say them.
      const why = error instanceof Error ? error.message : describeValue(error);
      throw new LockUsageError(
        `@Locked(fn) on ${where}: the key function threw: ${why.length > 200 ? `${why.slice(0, 200)}…` : why}`,
        { code: 'LOCK_KEY_FUNCTION_FAILED', cause: error },
      );
    }
    if (Array.isArray(key)) {
      if (key.length === 0) {
        const detail = 'the key function returned an empty array of keys.';
        throw keyError(`@Locked(fn) on ${where}: ${detail}`, { detail });
      }
      return key.map((element: unknown, i) => {
        if (typeof element !== 'string') {
          throw keyError(
            `@Locked(fn) on ${where}: the key function returned an array whose element [${i}] is ` +
              `${describeValue(element)}, not a string.`,
            {
              detail: `the key function returned an array whose element [${i}] is ${kindOf(element)}, not a string.`,
            },
          );
        }
        return checked(element, where, 'fn');
      });
    }
    if (typeof key !== 'string') {
      throw keyError(
        `@Locked(fn) on ${where}: the key function returned ${typeof key}, not a string or an array of strings.`,
        { detail: `the key function returned ${kindOf(key)}, not a string or an array of strings.` },
      );
    }
    return checked(key, where, 'fn');
  };
}

/** The general key rules (length, braces, well-formed Unicode), with the method named in the message. */
function checked(key: string, where: string, template: string): string {
  try {
    return validateKey(key);
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    // What the client may learn: what is wrong with the key its request led to, never the key itself.
    const detail = `the key ${template === 'fn' ? 'the key function returned' : 'built'} ${keyProblem(key)}`;
    throw keyError(`@Locked('${template}') on ${where}: ${why}`, { cause: error, detail });
  }
}

const HOLDS_BRACE = 'holds a brace ({ or }), which a lock key may not contain.';
const HOLDS_LONE_SURROGATE = 'holds half of a UTF-16 surrogate pair alone, which is not valid Unicode.';

function keyProblem(key: string): string {
  if (key.length === 0) return 'is empty.';
  if (key.length > MAX_KEY_LENGTH)
    return `is ${key.length} characters, over the ${MAX_KEY_LENGTH}-character limit.`;
  if (/[{}]/.test(key)) return HOLDS_BRACE;
  if (hasLoneSurrogate(key)) return HOLDS_LONE_SURROGATE;
  return 'is not a valid lock key.';
}

/**
 * The argument indexes a template string reads (`'transfer:<1.from>:<0>'` → [1, 0]); none for a key
 * function. For the start-up check that the method can receive them.
 */
export function templateIndexes(template: LockKeyTemplate): number[] {
  if (Array.isArray(template)) return template.flatMap((element) => templateIndexes(element as string));
  if (typeof template !== 'string') return [];
  return [...template.matchAll(PLACEHOLDER)].map((match) => Number(match[1].trim().split('.')[0]));
}

/** An HttpException of any copy of @nestjs/common: told by its shape. */
function isHttpException(error: unknown): boolean {
  const candidate = error as { getStatus?: unknown; getResponse?: unknown } | null;
  return (
    typeof candidate === 'object' &&
    candidate !== null &&
    typeof candidate.getStatus === 'function' &&
    typeof candidate.getResponse === 'function'
  );
}

/** A value's kind for a message the caller reads: `undefined`, `null`, a type, never the value. */
function kindOf(value: unknown): string {
  if (value === null || value === undefined) return String(value);
  return Array.isArray(value) ? 'an array' : `a ${typeof value}`;
}
