// Bounds the code keeps to, checked so that they stay kept: small files named by role (the library's at
// most 600 lines, the fault suite's at most 350), layers that import only downwards (the protocol, Lua
// scripts and the class that runs them, depends on nothing above it; the engine reaches it only through
// the stores and knows nothing of Nest or the lock board; one folder per client library under
// lib/clients/, which neither the protocol nor another library reaches into), and no import circles.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from '@jest/globals';

const root = process.cwd();

function files(dir: string): string[] {
  return readdirSync(join(root, dir)).flatMap((name) => {
    const path = join(dir, name);
    return statSync(join(root, path)).isDirectory() ? files(path) : path.endsWith('.ts') ? [path] : [];
  });
}

const lines = (file: string) => readFileSync(join(root, file), 'utf8').split('\n').length - 1;

/** The files of lib/ that `file` imports or re-exports from, types included (relative imports only). */
function imports(file: string): string[] {
  const source = readFileSync(join(root, file), 'utf8');
  return [...source.matchAll(/^(?:import|export)\b[^;]*?\bfrom '(\.[^']+)'/gms)].flatMap((m) => {
    const target = relative(root, join(root, file, '..', m[1]));
    return [`${target}.ts`, join(target, 'index.ts')].filter((candidate) =>
      existsSync(join(root, candidate)),
    );
  });
}

/** `from → to` for each import of `from` files that lands in one of the `forbidden` folders. */
function reaching(from: readonly string[], forbidden: readonly string[]): string[] {
  return from.flatMap((file) =>
    imports(file)
      .filter((target) => forbidden.some((dir) => target.startsWith(`${dir}/`)))
      .map((target) => `${file} → ${target}`),
  );
}

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

  it('the engine (LockService, lib/engine/, lib/telemetry/) imports nothing from the protocol, Nest or the board', () => {
    const engine = ['lib/lock.service.ts', ...files('lib/engine'), ...files('lib/telemetry')];
    expect(engine.length).toBeGreaterThan(5);
    expect(reaching(engine, ['lib/protocol', 'lib/nest', 'lib/board', 'lib/testing'])).toEqual([]);
  });

  it('lib/protocol/ depends on nothing above it: only on itself and lib/errors/', () => {
    const protocol = files('lib/protocol');
    expect(protocol.length).toBeGreaterThan(10);
    const above = protocol.flatMap((file) =>
      imports(file)
        .filter((target) => !target.startsWith('lib/protocol/') && !target.startsWith('lib/errors/'))
        .map((target) => `${file} → ${target}`),
    );
    expect(above).toEqual([]);
  });

  it('the stores import nothing from the engine, Nest or the board', () => {
    expect(reaching(files('lib/store'), ['lib/engine', 'lib/nest', 'lib/board', 'lib/testing'])).toEqual([]);
  });

  it('no file of lib/ imports itself back through others (types included)', () => {
    const all = files('lib');
    const graph = new Map(all.map((file) => [file, imports(file)]));
    // Depth-first search; a file met again while still on the path closes a circle.
    const circles: string[] = [];
    const state = new Map<string, 'open' | 'done'>();
    const visit = (file: string, path: string[]) => {
      state.set(file, 'open');
      for (const next of graph.get(file) ?? []) {
        if (state.get(next) === 'open') circles.push([...path.slice(path.indexOf(next)), next].join(' → '));
        else if (!state.has(next)) visit(next, [...path, next]);
      }
      state.set(file, 'done');
    };
    for (const file of all) if (!state.has(file)) visit(file, [file]);
    expect(graph.size).toBeGreaterThan(80);
    expect(circles).toEqual([]);
  });
  it('no two folders of lib/ import each other: between two rooms, imports go one way', () => {
    const room = (file: string) => file.split('/')[1];
    const folders = readdirSync(join(root, 'lib')).filter((name) =>
      statSync(join(root, 'lib', name)).isDirectory(),
    );
    const reaches = new Map<string, string>();
    for (const file of folders.flatMap((folder) => files(`lib/${folder}`)))
      for (const target of imports(file))
        if (target.split('/').length > 2 && room(target) !== room(file))
          reaches.set(`${room(file)} → ${room(target)}`, `${file} → ${target}`);
    const bothWays = [...reaches.keys()]
      .filter((pair) => reaches.has(pair.split(' → ').reverse().join(' → ')))
      .map((pair) => reaches.get(pair));
    expect(folders).toEqual(expect.arrayContaining(['engine', 'telemetry', 'options', 'store', 'protocol']));
    expect(bothWays).toEqual([]);
  });

  it('lib/protocol/ (lib/protocol/connection.ts included) imports nothing from lib/clients/', () => {
    const protocol = files('lib/protocol');
    expect(protocol).toContain('lib/protocol/connection.ts');
    expect(reaching(protocol, ['lib/clients'])).toEqual([]);
  });

  it("a client library's folder under lib/clients/ imports nothing from another library's folder", () => {
    const libraries = readdirSync(join(root, 'lib/clients')).filter((name) =>
      statSync(join(root, 'lib/clients', name)).isDirectory(),
    );
    const crossing = libraries.flatMap((library) =>
      reaching(
        files(`lib/clients/${library}`),
        libraries.filter((other) => other !== library).map((other) => `lib/clients/${other}`),
      ),
    );
    expect(libraries).toEqual(expect.arrayContaining(['ioredis', 'node-redis']));
    expect(crossing).toEqual([]);
  });

  it('lib/clients/ depends only on itself, the connection interface, lib/errors/ and the option wording', () => {
    const allowed = (target: string) =>
      target.startsWith('lib/clients/') ||
      target.startsWith('lib/errors/') ||
      target === 'lib/protocol/connection.ts' ||
      target === 'lib/options/describe-value.ts';
    const above = files('lib/clients').flatMap((file) =>
      imports(file)
        .filter((target) => !allowed(target))
        .map((target) => `${file} → ${target}`),
    );
    expect(above).toEqual([]);
  });
});
