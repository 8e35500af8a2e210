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
});
