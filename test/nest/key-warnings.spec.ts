// Start-up warnings for @Locked keys that compile and run but do not lock what was meant (the traps of
// code ported from murlock and nest-redlock): each reaches the Nest logger and onWarning once per method,
// with the fix in its words; correct declarations, `constantKey: true` and methods without parameters
// get none; and no template written in the README, docs, sample or tests trips the heuristic.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { Injectable, type LoggerService } from '@nestjs/common';
import {
  Locked,
  type LockedKeyWarning,
  type LockKeyFunction,
  LockUsageError,
  type LockWarning,
  RedisLockModule,
} from '../../lib';
import { compileKeyTemplate } from '../../lib/nest/key-template';
import { keyWarnings, type LockedDeclaration, sharedKeyWarnings } from '../../lib/nest/key-warnings';
import type { LockedSpec } from '../../lib/nest/redis-lock-options.interface';
import { bootApp } from '../support/nest-apps';
import { useRedis } from '../support/redis-server';
import { connection } from './locked-fixtures';

const server = useRedis();

/**
 * Key functions written for nest-redlock, whose functions receive the target first. TypeScript refuses
 * them on @Locked when their parameters are typed; held as `any` (or written in JavaScript) they compile,
 * which is what the start-up warning is for.
 */
// biome-ignore lint/suspicious/noExplicitAny: the loosely typed code the warning catches.
const redlockStyle: any = (_target: unknown, id: unknown) => `order:${String(id)}`;
// biome-ignore lint/suspicious/noExplicitAny: as above.
const redlockTransfer: any = (_target: unknown, from: unknown, to: unknown) => [
  `account:${String(from)}`,
  `account:${String(to)}`,
];

// biome-ignore lint/suspicious/noExplicitAny: as above; same parameter count as the method it decorates.
const redlockComment: any = (_target: unknown, projectId: unknown) => `project:${String(projectId)}`;

/** A call of each ported method, and the key the template its warning suggests gives that call. */
const SUGGESTED_KEY: Record<string, [unknown[], string]> = {
  'Ported.rename': [[{ id: 'u7' }, 'Ada'], 'user:u7'],
  'Ported.pay': [['o1'], 'orderId:o1'],
  'Ported.restock': [['sku-1'], 'sku:sku-1'],
  'Ported.block': [[{ userId: 'u7' }], 'u7'],
  'Ported.ship': [[{ orderId: 'o1' }], 'o1'],
};

@Injectable()
class Ported {
  @Locked('0.userId')
  async block(_dto: { userId: string }): Promise<void> {}

  @Locked('orderId')
  async ship(_dto: { orderId: string }): Promise<void> {}

  @Locked(redlockComment)
  async addComment(_projectId: string, _comment: string): Promise<void> {}

  @Locked('user.id', { ttl: 5_000 })
  async rename(_user: { id: string }, _name: string): Promise<void> {}

  @Locked('orderId')
  async pay(_orderId: string): Promise<void> {}

  @Locked('sku')
  async restock(sku: string): Promise<string> {
    return sku;
  }

  @Locked(redlockStyle)
  async refund(_id: string): Promise<void> {}

  @Locked(redlockTransfer)
  async transfer(_from: string, _to: string): Promise<void> {}

  @Locked(['account:<0>', 'ledger.entry'])
  async post(_account: string): Promise<void> {}
}

@Injectable()
class Correct {
  @Locked('user:<0.id>')
  async rename(_user: { id: string }): Promise<void> {}

  @Locked((id: string) => `order:${id}`)
  async pay(_id: string): Promise<void> {}

  @Locked('reports.daily', { constantKey: true })
  async daily(_day: string): Promise<void> {}

  /** No parameters: a constant key is the only key it can have. */
  @Locked('reports.nightly')
  async nightly(): Promise<void> {}

  /** A plain word reads as a name, not as an argument. */
  @Locked('inventory-sync')
  async sync(_full: boolean): Promise<void> {}

  @Locked((from: string, to: string) => [`account:${from}`, `account:${to}`])
  async transfer(_from: string, _to: string): Promise<void> {}
}

/** murlock prefixed each key with its Class.method: ported as is, these two share a lock. */
@Injectable()
class UsersRenamer {
  @Locked('rename:<0>')
  async rename(_userId: string): Promise<void> {}
}

@Injectable()
class TeamsRenamer {
  @Locked('rename:<0>')
  async rename(_teamId: string): Promise<void> {}
}

/** Sharing on purpose: two methods guard one order. And one method name, scoped apart. */
@Injectable()
class Payments {
  @Locked('order:<0>')
  async pay(_orderId: string): Promise<void> {}

  @Locked('invoice:<0>', { scope: true })
  async issue(_id: string): Promise<void> {}
}

@Injectable()
class Refunds {
  @Locked('order:<0>')
  async refund(_orderId: string): Promise<void> {}

  @Locked('invoice:<0>')
  async issue(_id: string): Promise<void> {}
}

/** What the Nest logger got, at warn level. */
class WarnLog implements LoggerService {
  readonly warnings: string[] = [];
  log() {}
  error() {}
  warn(message: unknown) {
    this.warnings.push(String(message));
  }
}

async function start(providers: Array<new (...args: never[]) => unknown>) {
  const seen: LockWarning[] = [];
  const logger = new WarnLog();
  const app = await bootApp({
    imports: [RedisLockModule.forRoot({ ...connection(server()), onWarning: (w) => seen.push(w) })],
    providers,
    configure: (builder) => builder.setLogger(logger),
    logger,
  });
  await app.close();
  const keyWarnings = seen.filter((w): w is LockedKeyWarning => 'method' in w);
  return { keyWarnings, logged: logger.warnings };
}

describe('start-up warnings for doubtful @Locked keys', () => {
  it('warns once per ported method, through the Nest logger and onWarning, with the fix', async () => {
    const { keyWarnings, logged } = await start([Ported]);
    const by = (method: string) => keyWarnings.filter((w) => w.method === method);
    expect(keyWarnings.map((w) => `${w.method} ${w.code}`).sort()).toEqual([
      'Ported.addComment key-function-parameters',
      'Ported.block constant-key',
      'Ported.pay constant-key',
      'Ported.post constant-key',
      'Ported.refund key-function-parameters',
      'Ported.rename constant-key',
      'Ported.restock constant-key',
      'Ported.ship constant-key',
      'Ported.transfer key-function-parameters',
    ]);
    // The message says what happens and what to write instead.
    expect(by('Ported.rename')[0].message).toContain('every call locks the one constant key "user.id"');
    expect(by('Ported.rename')[0].message).toContain("'user:<0.id>'");
    expect(by('Ported.rename')[0].message).toContain('{ constantKey: true }');
    expect(by('Ported.pay')[0].message).toContain("'orderId:<0>'");
    expect(by('Ported.restock')[0].message).toContain("'sku:<0>'");
    expect(by('Ported.post')[0].message).toContain('"ledger.entry"');
    expect(by('Ported.refund')[0].message).toMatch(/declares 2 parameters, but the method receives 1/);
    expect(by('Ported.transfer')[0].message).toMatch(/declares 3 parameters, but the method receives 2/);
    expect(by('Ported.block')[0].message).toContain("'<0.userId>'");
    expect(by('Ported.ship')[0].message).toContain("'<0.orderId>'");
    expect(by('Ported.addComment')[0].message).toMatch(
      /first parameter is named _target, .* receives the method's first argument \(_projectId\)/,
    );
    // Each suggestion, written as the template, locks per argument: it resolves against a real call.
    for (const [method, [args, key]] of Object.entries(SUGGESTED_KEY)) {
      const suggested = /say which: '([^']+)'/.exec(by(method)[0].message)?.[1] as string;
      expect([method, compileKeyTemplate(suggested, method)(args)]).toEqual([method, key]);
    }
    // Each one also reached the application's log, once.
    for (const warning of keyWarnings) {
      expect(logged.filter((line) => line === warning.message)).toHaveLength(1);
    }
  });

  it('says nothing about correct keys, constantKey: true, or methods without parameters', async () => {
    const { keyWarnings, logged } = await start([Correct]);
    expect(keyWarnings).toEqual([]);
    expect(logged.filter((line) => line.includes('@Locked'))).toEqual([]);
  });

  it('warns of one method name on two classes with one key, not of keys shared on purpose', async () => {
    const { keyWarnings, logged } = await start([UsersRenamer, TeamsRenamer, Payments, Refunds]);
    expect(keyWarnings.map((w) => `${w.method} ${w.code}`).sort()).toEqual([
      'TeamsRenamer.rename shared-key',
      'UsersRenamer.rename shared-key',
    ]);
    const [users] = keyWarnings.filter((w) => w.method === 'UsersRenamer.rename');
    expect(users.message).toMatch(
      /^@Locked\('rename:<0>'\) on UsersRenamer\.rename: TeamsRenamer\.rename locks the same keys/,
    );
    expect(users.message).toContain("'UsersRenamer:rename:<0>'");
    expect(users.message).toContain('{ scope: true }');
    expect(logged.filter((line) => line.includes('locks the same keys'))).toHaveLength(2);
  });

  it('refuses constantKey on a key resolved from the arguments, and a bad value', () => {
    expect(() => Locked('order:<0>', { constantKey: true })).not.toThrow();
    const decorate = (key: string | LockKeyFunction, options: object) => {
      class Target {
        async run(_id: string): Promise<void> {}
      }
      const descriptor = Object.getOwnPropertyDescriptor(Target.prototype, 'run') as PropertyDescriptor;
      (Locked(key, options) as MethodDecorator)(Target.prototype, 'run', descriptor);
    };
    expect(() => decorate('order:<0>', { constantKey: true })).toThrow(LockUsageError);
    expect(() => decorate('order:<0>', { constantKey: true })).toThrow(/remove constantKey/);
    expect(() => decorate((id: unknown) => `o:${id}`, { constantKey: true })).toThrow(LockUsageError);
    expect(() => decorate('nightly', { constantKey: 'yes' })).toThrow(/constantKey must be true or false/);
    expect(() => decorate('nightly', { constantKey: true })).not.toThrow();
  });
});

describe('every @Locked template written in the README, docs, sample and tests', () => {
  /** `@Locked('<template>', { options })` followed by the method it decorates (other decorators between). */
  const DECLARATION =
    /@Locked\(\s*'([^'\n]*)'\s*(?:,\s*(\{[^)]*?\}))?\s*\)\s*\n(?:\s*@[\w.]+(?:\([^\n]*\))?\s*\n)*\s*(?:(?:public|private|protected|async|override)\s+)*(\w+)\s*\(((?:[^()]|\([^()]*\))*)\)/g;
  const THIS_FILE = join('test', 'nest', 'key-warnings.spec.ts');

  function files(dir: string, ext: RegExp): string[] {
    return readdirSync(dir).flatMap((name) => {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) return name === 'node_modules' ? [] : files(path, ext);
      return ext.test(name) && path !== THIS_FILE ? [path] : [];
    });
  }

  /** The declarations written in `text`, with the method's parameters as JavaScript names. */
  function declarationsIn(file: string, text: string) {
    // A trap shown on purpose (docs/migrating.md) says so on the line above: `// Wrong: ...`.
    const shownAsWrong = (at: number) =>
      /\/\/ Wrong\b[^\n]*\n\s*$/.test(text.slice(Math.max(0, at - 300), at));
    return [...text.matchAll(DECLARATION)]
      .filter((m) => !shownAsWrong(m.index ?? 0))
      .map((m) => ({
        file,
        // The class it is in, and (in Markdown) the code block: one example application each.
        className: [...text.slice(0, m.index).matchAll(/\bclass\s+(\w+)/g)].at(-1)?.[1] ?? 'Anonymous',
        block: file.endsWith('.md') ? text.slice(0, m.index).split('```').length >> 1 : 0,
        template: m[1],
        options: m[2] ?? '',
        method: m[3],
        // TypeScript parameters as JavaScript ones: their names, without types, modifiers or defaults.
        parameters: m[4]
          .split(',')
          .map((p) => p.replace(/@\w+\([^)]*\)/g, '').trim())
          .filter(Boolean)
          .map((p, i) => /^(?:(?:readonly|private|public)\s+)*([A-Za-z_$][\w$]*)/.exec(p)?.[1] ?? `p${i}`),
      }));
  }

  /** Those the start-up check would warn about, as `file: @Locked('template') method(parameters)`. */
  function warned(declarations: ReturnType<typeof declarationsIn>): string[] {
    return declarations
      .filter((d) => {
        // A method with the declared parameter names and nothing else, for parameterNames to read.
        const method = new Function(...d.parameters, '') as (...args: never[]) => unknown;
        const spec = {
          where: `${d.file}: ${d.method}`,
          template: d.template,
          method,
          options: { constantKey: /constantKey:\s*true/.test(d.options) },
        } as unknown as LockedSpec;
        return keyWarnings(spec).length > 0;
      })
      .map((d) => `${d.file}: @Locked('${d.template}') ${d.method}(${d.parameters})`);
  }

  const sources = [
    'README.md',
    ...files('docs', /\.md$/),
    ...files('sample', /\.ts$/),
    ...files('test', /\.ts$/),
  ];
  const declarations = sources.flatMap((file) => declarationsIn(file, readFileSync(file, 'utf8')));

  it('finds the declarations, and would see a trap written among them', () => {
    expect(declarations.length).toBeGreaterThan(50);
    expect(new Set(declarations.map((d) => d.file)).size).toBeGreaterThan(10);
    const trap =
      "  @Locked('user.id', { ttl: 5_000 })\n  @Post(':id')\n  async rename(@Body() user: User) {}\n";
    expect(warned(declarationsIn('example.ts', trap))).toEqual([
      "example.ts: @Locked('user.id') rename(user)",
    ]);
  });

  it('none of them is warned about', () => {
    expect(warned(declarations)).toEqual([]);
  });

  it('none in the README, docs or sample is warned about as a shared key (a code block: one application)', () => {
    const apps = new Map<string, LockedDeclaration[]>();
    for (const d of declarations.filter((d) => !d.file.startsWith('test'))) {
      const spec = {
        where: `${d.className}.${d.method}`,
        template: d.template,
        options: /scope:\s*true/.test(d.options) ? { scope: true } : {},
      } as unknown as LockedSpec;
      const app = `${d.file} #${d.block}`;
      apps.set(app, [...(apps.get(app) ?? []), { spec, controller: /Controller$/.test(d.className) }]);
    }
    const warnings = [...apps].flatMap(([app, list]) =>
      sharedKeyWarnings(list, false).map((w) => `${app}: ${w.method}`),
    );
    expect(warnings).toEqual([]);
  });
});
