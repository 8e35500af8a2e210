// Every TypeScript snippet in the README and docs/ must compile against the real API: a doc example that does
// not compile is a bug. The README's unit test (Testing your code) is also run: it is
// test/testing/readme-example.spec.ts, which must stay identical to it.
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import ts from 'typescript';
import { userCompilerOptions } from './support/typescript-options';

const root = process.cwd();
// Every page of docs/ too: a snippet moved out of the README stays compiled wherever it lands.
const documents = [
  'README.md',
  ...readdirSync(join(root, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `docs/${name}`),
];
const snippets = documents.flatMap((doc) =>
  [...readFileSync(join(root, doc), 'utf8').matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]),
);

/** The README snippet that is a jest test file of its own, and the file jest runs. */
const RUN_SNIPPET_HEADER = '// orders.service.spec.ts';
const RUN_SNIPPET_FILE = 'test/testing/readme-example.spec.ts';

describe('README and docs/', () => {
  // One program over every snippet, each its own file and its own module (nothing it declares is seen by
  // another): the type-checker loads the library's and Nest's declarations once, not once per snippet.
  let dir: string;
  let files: string[];
  let program: ts.Program;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'readme-'));
    files = snippets.map((code, i) => {
      const file = join(dir, `snippet-${i + 1}.ts`);
      writeFileSync(file, code);
      return file;
    });
    program = ts.createProgram(files, {
      ...userCompilerOptions(root),
      moduleDetection: ts.ModuleDetectionKind.Force,
    });
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('has TypeScript snippets', () => {
    expect(snippets.length).toBeGreaterThan(0);
  });

  it(`runs the unit test of "Testing your code" as ${RUN_SNIPPET_FILE}`, () => {
    const inReadme = snippets.filter((code) => code.startsWith(RUN_SNIPPET_HEADER));
    expect(inReadme).toHaveLength(1);
    expect(readFileSync(join(root, RUN_SNIPPET_FILE), 'utf8')).toBe(inReadme[0]);
  });

  it.each(snippets.map((_, i) => [i + 1]))('snippet %i compiles', (n) => {
    const source = program.getSourceFile(files[(n as number) - 1]);
    expect(source).toBeDefined();
    const diagnostics = ts
      .getPreEmitDiagnostics(program, source)
      .map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
    expect(diagnostics).toEqual([]);
  });

  // The snippets that import a client library compile on each version of it the docs name, not only on
  // the one installed (ioredis 5, redis 6): the others come from npm aliases (package.json).
  it.each([
    ['ioredis', 'ioredis 6', 'ioredis-6'],
    ['redis', 'node-redis 5', 'redis-5'],
    ['redis', 'node-redis 4', 'redis-4'],
  ])(
    "every snippet that imports '%s' compiles on %s, unless it names other versions",
    (library, _, alias) => {
      const imports = new RegExp(`from '${library}'`);
      // A snippet for some versions only says so on its first line: `// node-redis 6: …`.
      const major = alias.split('-')[1];
      const forVersions = (code: string) =>
        /^\/\/ (?:ioredis|node-redis) ([\d, and]+)/.exec(code)?.[1].match(/\d+/g) ?? [major];
      const uses = (code: string) => imports.test(code) && forVersions(code).includes(major);
      const chosen = files.filter((_, i) => uses(snippets[i]));
      expect(chosen.length).toBeGreaterThan(0);
      const options = userCompilerOptions(root);
      const variant = ts.createProgram(chosen, {
        ...options,
        moduleDetection: ts.ModuleDetectionKind.Force,
        // The alias's own dependencies (node-redis is @redis/client underneath) before the installed ones,
        // which '*' would map its imports to.
        paths: {
          ...options.paths,
          [library]: [`node_modules/${alias}`],
          '@redis/*': [`node_modules/${alias}/node_modules/@redis/*`, 'node_modules/@redis/*'],
          '@ioredis/*': [`node_modules/${alias}/node_modules/@ioredis/*`, 'node_modules/@ioredis/*'],
        },
      });
      const failures = chosen.flatMap((file) =>
        ts
          .getPreEmitDiagnostics(variant, variant.getSourceFile(file))
          .map(
            (d) =>
              `snippet ${files.indexOf(file) + 1}: ${ts.flattenDiagnosticMessageText(d.messageText, ' ')}`,
          ),
      );
      expect(failures).toEqual([]);
    },
  );
});
