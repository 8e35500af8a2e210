/**
 * Start-up warnings for @Locked keys that compile and run but do not lock what was meant, each found
 * when porting code from other lock libraries:
 *
 * - `constant-key`: a template with no placeholder that reads like an argument (`'user.id'`, `'orderId'`,
 *   or a parameter's name) on a method that takes parameters. It is one constant key, so every call
 *   shares one lock (murlock's `@MurLock(5000, 'user.id')` ported as `@Locked('user.id')`).
 * - `key-function-parameters`: a key function that declares more parameters than the method receives
 *   (nest-redlock's `(target, id) => ...` pasted as is locks `undefined`'s neighbour, not the id).
 *
 * Heuristics, so warnings, not errors: `constantKey: true` on the decorator says a constant key is meant.
 */
import type { ServerRisk } from '../store/server-watch';
import { templateIndexes } from './key-template';
import { parameterCapacity, parameterNames } from './method-parameters';
import type { LockedSpec } from './redis-lock-options.interface';

/** Kinds of key warning (see the file's comment). */
export type LockedKeyWarningCode = 'constant-key' | 'key-function-parameters';

/** A @Locked declaration whose key is probably not what was meant, with the sentence a log line shows. */
export interface LockedKeyWarning {
  code: LockedKeyWarningCode;
  /** `Class.method` of the declaration. */
  method: string;
  message: string;
}

/** What `onWarning` receives: a risk of the lock's Redis, or (from the Nest module) a key warning. */
export type LockWarning = ServerRisk | LockedKeyWarning;

/** An identifier with an inner capital, as parameter names are written: `orderId`, `userId`. */
const CAMEL_CASE = /^[a-z][a-z0-9]*[A-Z][A-Za-z0-9]*$/;
/** Dotted property paths: `user.id`, `dto.order.id`. */
const PROPERTY_PATH = /^[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*)+$/;

/** The warnings a declaration deserves (none for most). */
export function keyWarnings(spec: LockedSpec): LockedKeyWarning[] {
  const capacity = parameterCapacity(spec.method);
  const warn = (code: LockedKeyWarningCode, message: string): LockedKeyWarning => ({
    code,
    method: spec.where,
    message,
  });
  const { template } = spec;
  if (typeof template === 'function') {
    // fn.length counts the parameters before the first default or rest one: never more than declared.
    if (template.length <= capacity) return [];
    return [
      warn(
        'key-function-parameters',
        `@Locked(fn) on ${spec.where}: the key function declares ${template.length} parameters, but the ` +
          `method receives ${capacity}. A key function receives the method's arguments only, in order ` +
          '(not the class or instance first): write (id) => ... rather than (target, id) => ....',
      ),
    ];
  }
  if (capacity === 0 || spec.options.constantKey === true) return [];
  const names = parameterNames(spec.method);
  const templates: readonly string[] = typeof template === 'string' ? [template] : template;
  return templates
    .filter((text) => templateIndexes(text).length === 0 && readsLikeAnArgument(text, names))
    .map((text) =>
      warn(
        'constant-key',
        `@Locked('${text}') on ${spec.where}: the key has no placeholder, so every call locks the one ` +
          `constant key "${text}". To lock per argument, say which: ${suggestion(text, names)} (an ` +
          'argument index, then a property path). If one lock for every call is meant, add { constantKey: true }.',
      ),
    );
}

function readsLikeAnArgument(text: string, names: readonly string[]): boolean {
  return text.includes('.') || CAMEL_CASE.test(text) || names.includes(text);
}

/** A template for what `text` probably meant: `'user.id'` on `(user)` → `'user:<0.id>'`. */
function suggestion(text: string, names: readonly string[]): string {
  if (PROPERTY_PATH.test(text)) {
    const [first, ...path] = text.split('.');
    const index = Math.max(0, names.indexOf(first));
    return `'${first}:<${[index, ...path].join('.')}>'`;
  }
  const index = names.indexOf(text);
  if (index >= 0) return `'${text}:<${index}>'`;
  return `'${text}:<0>'`;
}
