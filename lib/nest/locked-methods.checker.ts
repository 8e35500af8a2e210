/**
 * At start-up, checks every @Locked method bound to this configuration against its LockService (the
 * same validation a call gets), so a bad declaration stops the application from starting with a message
 * naming the method, instead of failing on its first call.
 */
import { type OnModuleInit } from '@nestjs/common';
import { type DiscoveryService, MetadataScanner } from '@nestjs/core';
import { LockOptionsError } from '../errors/lock-options.error';
import type { LockService } from '../lock.service';
import { LOCKED_METADATA } from './redis-lock.constants';
import type { LockedSpec } from './redis-lock-options.interface';

export class LockedMethodsChecker implements OnModuleInit {
  constructor(
    private readonly discovery: DiscoveryService,
    private readonly locks: LockService,
    private readonly name: string | undefined,
  ) {}

  onModuleInit(): void {
    const scanner = new MetadataScanner();
    const classes = new Set<object>();
    for (const wrapper of [...this.discovery.getProviders(), ...this.discovery.getControllers()]) {
      // Class providers of any scope; factories and values have no methods of their own to check.
      if (typeof wrapper.metatype === 'function' && !wrapper.inject && wrapper.metatype.prototype) {
        classes.add(wrapper.metatype.prototype);
      }
    }
    for (const prototype of classes) {
      for (const method of scanner.getAllMethodNames(prototype)) {
        const fn = (prototype as Record<string, unknown>)[method];
        const spec =
          typeof fn === 'function' ? (Reflect.getMetadata(LOCKED_METADATA, fn) as LockedSpec) : undefined;
        if (!spec || spec.options.service !== this.name) continue;
        try {
          // Only the options that reach acquire(); the decorator's own (onTimeout, service) were
          // checked when it was applied.
          const { ttl, waitTimeout, renew, minHold } = spec.options;
          this.locks.checkOptions({ ttl, waitTimeout, renew, minHold });
        } catch (error) {
          throw new LockOptionsError(`@Locked() on ${spec.where}: ${(error as Error).message}`);
        }
      }
    }
  }
}
