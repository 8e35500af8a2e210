/**
 * At start-up, checks every @Locked method bound to this configuration: its options against its
 * LockService (the same validation a call gets), and its key template against the method's parameters
 * (an argument index it can never receive). A bad declaration stops the application from starting with
 * a message naming the method, instead of failing on its first call; a doubtful key (see key-warnings)
 * is logged, once per method.
 */
import { type OnModuleInit } from '@nestjs/common';
import { type DiscoveryService, MetadataScanner } from '@nestjs/core';
import { keyError, LockUsageError } from '../errors/lock-usage.error';
import type { LockService } from '../lock.service';
import { declaredOptions } from '../options/call-options';
import { templateIndexes } from './key-template';
import { keyWarnings, type LockedDeclaration, sharedKeyWarnings } from './key-warnings';
import { parameterCapacity } from './method-parameters';
import { LOCKED_METADATA } from './redis-lock.constants';
import type { KeyScope, LockedKeyWarning, LockedSpec } from './redis-lock-options.interface';

export class LockedMethodsChecker implements OnModuleInit {
  constructor(
    private readonly discovery: DiscoveryService,
    private readonly locks: LockService,
    private readonly name: string | undefined,
    /** Where doubtful keys are reported (they run, so they warn rather than stop the application). */
    private readonly warn: (warning: LockedKeyWarning) => void,
    /** The module's `scope`, which prefixes keys (the shared-key check compares keys as prefixed). */
    private readonly scope: KeyScope = false,
    /** Lets go of what the configuration opened when a declaration stops the application. */
    private readonly refused: () => void = () => {},
  ) {}

  onModuleInit(): void {
    try {
      this.check();
    } catch (error) {
      this.refused();
      throw error;
    }
  }

  private check(): void {
    const scanner = new MetadataScanner();
    /** Each class, and whether it is a controller. */
    const classes = new Map<object, boolean>();
    const controllers = this.discovery.getControllers();
    for (const wrapper of [...this.discovery.getProviders(), ...controllers]) {
      // Class providers of any scope; factories and values have no methods of their own to check.
      if (typeof wrapper.metatype === 'function' && !wrapper.inject && wrapper.metatype.prototype) {
        classes.set(wrapper.metatype.prototype, controllers.includes(wrapper));
      }
    }
    const declarations: LockedDeclaration[] = [];
    for (const [prototype, controller] of classes) {
      for (const method of scanner.getAllMethodNames(prototype)) {
        const fn = (prototype as Record<string, unknown>)[method];
        const spec =
          typeof fn === 'function' ? (Reflect.getMetadata(LOCKED_METADATA, fn) as LockedSpec) : undefined;
        if (!spec || spec.options.service !== this.name) continue;
        try {
          // Only the options that reach acquire(); the decorator's own (onTimeout, service) were
          // checked when it was applied.
          this.locks.checkOptions(declaredOptions(spec.options));
        } catch (error) {
          throw new LockUsageError(`@Locked() on ${spec.where}: ${(error as Error).message}`);
        }
        checkTemplateFits(spec);
        for (const warning of keyWarnings(spec)) this.warn(warning);
        declarations.push({ spec, controller });
      }
    }
    for (const warning of sharedKeyWarnings(declarations, this.scope)) this.warn(warning);
  }
}

/**
 * A template placeholder `<n>` reads the method's argument n: the method must declare at least n + 1
 * parameters (defaults count; a rest parameter takes any index). Called by Nest, a method gets only the
 * arguments it declares from a route or a scheduler, and a direct caller could pass more only by
 * ignoring the method's signature.
 */
function checkTemplateFits(spec: LockedSpec): void {
  const indexes = templateIndexes(spec.template);
  if (indexes.length === 0) return;
  const highest = Math.max(...indexes);
  const capacity = parameterCapacity(spec.method);
  if (highest < capacity) return;
  const template = String(spec.template);
  const shown = template.length > 80 ? `${template.slice(0, 80)}…` : template;
  const declared =
    capacity === 0 ? 'declares no parameters' : `declares ${capacity} parameter${capacity === 1 ? '' : 's'}`;
  throw keyError(
    `@Locked('${shown}') on ${spec.where}: <${highest}> reads argument ${highest + 1}, but the method ` +
      `${declared}. Point at an argument it receives (${capacity === 0 ? 'add a parameter' : `<0> to <${capacity - 1}>`}), or use a key function.`,
  );
}
