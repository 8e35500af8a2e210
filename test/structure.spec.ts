// Bounds the code keeps to, checked so that they stay kept: small files named by role (the library's at
// most 600 lines, the fault suite's at most 350), an engine that reaches the protocol (Lua scripts and
// the class that runs them) only through the stores, a protocol that depends on nothing above it, and
// one folder per client library under lib/clients/ that none of the others, nor the protocol, reaches into.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from '@jest/globals';

const root = process.cwd();

function files(dir: string): string[] {
  return readdirSync(join(root, dir)).flatMap((name) => {
    const path = join(dir, name);
    return statSync(join(root, path)).isDirectory() ? files(path) : path.endsWith('.ts') ? [path] : [];
  });
}

/** The files `file` imports by a relative path, from the repository's root. */
const imports = (file: string): string[] =>
  [...readFileSync(join(root, file), 'utf8').matchAll(/from '(\.[^']+)'/g)].map((m) =>
    relative(root, join(root, file, '..', m[1])),
  );

const lines = (file: string) => readFileSync(join(root, file), 'utf8').split('\n').length - 1;

describe('the code stays within its bounds', () => {
  it.each<[string, number]>([
    ['lib', 600],
    ['chaos', 350],
  ])('every file of %s/ has at most %i lines', (dir, limit) => {
    // The generated file is the Lua scripts as strings, not code anyone edits.
    const over = files(dir)
      .filter((file) => !file.endsWith('.generated.ts'))
      .map((file) => ({ file, lines: lines(file) }))
      .filter((entry) => entry.lines > limit);
    expect(over).toEqual([]);
  });

  it('the engine (LockService, lib/engine/, lib/telemetry/) imports nothing from lib/protocol/', () => {
    const engine = ['lib/lock.service.ts', ...files('lib/engine'), ...files('lib/telemetry')];
    const reaching = engine.flatMap((file) =>
      [...readFileSync(join(root, file), 'utf8').matchAll(/from '([^']+)'/g)]
        .map((m) => relative(root, join(root, file, '..', m[1])))
        .filter((target) => target.startsWith(join('lib', 'protocol')))
        .map((target) => `${file} → ${target}`),
    );
    expect(engine.length).toBeGreaterThan(5);
    expect(reaching).toEqual([]);
  });

  it('lib/protocol/ depends on nothing above it: only on itself and lib/errors/', () => {
    const protocol = files('lib/protocol');
    const above = protocol.flatMap((file) =>
      imports(file)
        .filter(
          (target) =>
            !target.startsWith(join('lib', 'protocol')) && !target.startsWith(join('lib', 'errors')),
        )
        .map((target) => `${file} → ${target}`),
    );
    expect(protocol.length).toBeGreaterThan(10);
    expect(above).toEqual([]);
  });

  it('lib/protocol/ (lib/protocol/connection.ts included) imports nothing from lib/clients/', () => {
    const protocol = files('lib/protocol');
    const reaching = protocol.flatMap((file) =>
      imports(file)
        .filter((target) => target.startsWith(join('lib', 'clients')))
        .map((target) => `${file} → ${target}`),
    );
    expect(protocol).toContain(join('lib', 'protocol', 'connection.ts'));
    expect(reaching).toEqual([]);
  });

  it("a client library's folder under lib/clients/ imports nothing from another library's folder", () => {
    const clients = join('lib', 'clients');
    const libraries = readdirSync(join(root, clients)).filter((name) =>
      statSync(join(root, clients, name)).isDirectory(),
    );
    const folder = (library: string, target: string) =>
      target === join(clients, library) || target.startsWith(`${join(clients, library)}/`);
    const crossing = libraries.flatMap((library) =>
      files(join(clients, library)).flatMap((file) =>
        imports(file)
          .filter((target) => libraries.some((other) => other !== library && folder(other, target)))
          .map((target) => `${file} → ${target}`),
      ),
    );
    expect(libraries).toEqual(expect.arrayContaining(['ioredis', 'node-redis']));
    expect(crossing).toEqual([]);
  });

  it('lib/clients/ depends only on itself, the connection interface, lib/errors/ and lib/describe-value.ts', () => {
    const allowed = (target: string) =>
      target.startsWith(join('lib', 'clients')) ||
      target.startsWith(join('lib', 'errors')) ||
      target === join('lib', 'protocol', 'connection') ||
      target === join('lib', 'describe-value');
    const above = files('lib/clients').flatMap((file) =>
      imports(file)
        .filter((target) => !allowed(target))
        .map((target) => `${file} → ${target}`),
    );
    expect(above).toEqual([]);
  });
});
