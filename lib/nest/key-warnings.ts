/**
 * Start-up warnings for @Locked keys that compile and run but do not lock what was meant, each found
 * when porting code from other lock libraries:
 *
 * - `constant-key`: a template with no placeholder that reads like an argument (`'user.id'`, `'orderId'`,
 *   or a parameter's name) on a method that takes parameters. It is one constant key, so every call
 *   shares one lock (murlock's `@MurLock(5000, 'user.id')` ported as `@Locked('user.id')`).
 * - `key-function-parameters`: a key function written for nest-redlock, whose functions receive the
 *   instance first: one that declares more parameters than the method receives (`(target, id) => ...` on
 *   `pay(id)`), or whose first parameter is named `target` (`(target, projectId) => ...` on
 *   `addComment(projectId, comment)` locks on the comment).
 * - `shared-key`: methods of one name on different classes with the same key (`UsersRenamer.rename`
 *   and `TeamsRenamer.rename` on `'rename:<0>'`): murlock prefixed each key with its `Class.method`, so
 *   ported as is, user 7 and team 7 share a lock. Sharing a key across methods is how two of them guard
 *   one resource (`pay` and `refund` on `'order:<0>'`): only the same method name on two classes is
 *   taken for the trap.
 *
 * Heuristics, so warnings, not errors: `constantKey: true` on the decorator says a constant key is meant.
 */
import { scopePrefix } from './key-scope';
import { templateIndexes } from './key-template';
import { parameterCapacity, parameterNames } from './method-parameters';
import type {
  KeyScope,
  LockedKeyWarning,
  LockedKeyWarningCode,
  LockedSpec,
} from './redis-lock-options.interface';

/** Kinds of key warning (see the file's comment). */
/** The first parameter of nest-redlock's key functions: the instance, as it is usually named. */
const TARGET = /^_*(target|instance|self|that)$/i;
/** An identifier with an inner capital, as parameter names are written: `orderId`, `userId`. */
const CAMEL_CASE = /^[a-z][a-z0-9]*[A-Z][A-Za-z0-9]*$/;

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
    const only =
      "A key function receives the method's arguments only, in order (not the class or instance " +
      'first): write (id) => ... rather than (target, id) => ....';
    // fn.length counts the parameters before the first default or rest one: never more than declared.
    if (template.length > capacity) {
      const declares = `declares ${template.length} parameters, but the method receives ${capacity}`;
      return [
        warn(
          'key-function-parameters',
          `@Locked(fn) on ${spec.where}: the key function ${declares}. ${only}`,
        ),
      ];
    }
    const [first] = parameterNames(template);
    const [methodFirst] = parameterNames(spec.method);
    if (first !== undefined && TARGET.test(first) && !(methodFirst && TARGET.test(methodFirst))) {
      const gets = methodFirst
        ? `the method's first argument (${methodFirst})`
        : "the method's first argument";
      return [
        warn(
          'key-function-parameters',
          `@Locked(fn) on ${spec.where}: the key function's first parameter is named ${first}, as ` +
            `nest-redlock's take the instance, but it receives ${gets}. ${only}`,
        ),
      ];
    }
    return [];
  }
  if (capacity === 0 || spec.options.constantKey === true) return [];
  // A leading underscore marks a parameter unused: `_user` is the `user` a template names.
  const names = parameterNames(spec.method).map((name) => name.replace(/^_+/, ''));
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

/**
 * A template for what `text` probably meant, one that resolves against the method's arguments: a
 * parameter's name reads that argument (`'orderId'` on `(orderId)` → `'orderId:<0>'`, `'user.id'` on
 * `(user)` → `'user:<0.id>'`); an argument path misses its brackets (`'0.userId'` → `'<0.userId>'`);
 * any other name or path is read in the first argument (`'orderId'` on `(dto)` → `'<0.orderId>'`).
 */
function suggestion(text: string, names: readonly string[]): string {
  if (ARGUMENT_PATH.test(text)) return `'<${text}>'`;
  const [first, ...path] = text.split('.');
  const index = names.indexOf(first);
  if (index >= 0) return `'${first}:<${[index, ...path].join('.')}>'`;
  return `'<0.${text}>'`;
}

/** An argument index and a property path, as a placeholder holds them: `0.userId`, `1.order.id`. */
const ARGUMENT_PATH = /^\d+(\.[A-Za-z_$][\w$]*)+$/;

/** A @Locked declaration, and whether its class is a controller. */
export interface LockedDeclaration {
  spec: LockedSpec;
  controller: boolean;
}

/**
 * The `shared-key` warnings among the declarations of one configuration: the same method name on
 * different classes of one kind, with the same keys once each one's scope is applied (`moduleScope`:
 * the module's). A controller method and the service method of the same name it calls, on one key, are
 * one resource locked twice (reentrant on one call chain), not the trap.
 */
export function sharedKeyWarnings(
  declarations: readonly LockedDeclaration[],
  moduleScope: KeyScope,
): LockedKeyWarning[] {
  const groups = new Map<string, LockedSpec[]>();
  for (const { spec, controller } of declarations) {
    if (typeof spec.template === 'function') continue;
    const templates = typeof spec.template === 'string' ? [spec.template] : [...spec.template].sort();
    const prefix = scopePrefix(spec, moduleScope);
    const group = `${controller}\n${methodName(spec)}\n${templates.map((t) => prefix + t).join('\n')}`;
    groups.set(group, [...(groups.get(group) ?? []), spec]);
  }
  const warnings: LockedKeyWarning[] = [];
  for (const group of groups.values()) {
    const classes = new Set(group.map(className));
    if (classes.size < 2) continue;
    for (const spec of group) {
      const others = group
        .filter((other) => className(other) !== className(spec))
        .map((other) => other.where);
      const template = String(spec.template);
      warnings.push({
        code: 'shared-key',
        method: spec.where,
        message:
          `@Locked('${template}') on ${spec.where}: ${others.join(', ')} ${others.length === 1 ? 'locks' : 'lock'} ` +
          'the same keys. Keys are global (murlock prefixed each with its Class.method), so for equal ' +
          'arguments these methods share one lock. If they guard different things, put the class in the ' +
          `key ('${className(spec)}:${template}') or set { scope: true }; if they guard one resource, ` +
          "this is what you want: leave out warnings of code 'shared-key' in onWarning.",
      });
    }
  }
  return warnings;
}

const className = (spec: LockedSpec): string => spec.where.slice(0, spec.where.lastIndexOf('.'));
const methodName = (spec: LockedSpec): string => spec.where.slice(spec.where.lastIndexOf('.') + 1);
