// Every TypeScript snippet in the README and docs/ must compile against the real API: a doc example that does
// not compile is a bug. The README's unit test (Testing your code) is also run: it is
// test/testing/readme-example.spec.ts, which must stay identical to it.
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from '@jest/globals';
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
  it('has TypeScript snippets', () => {
    expect(snippets.length).toBeGreaterThan(0);
  });

  it(`runs the unit test of "Testing your code" as ${RUN_SNIPPET_FILE}`, () => {
    const inReadme = snippets.filter((code) => code.startsWith(RUN_SNIPPET_HEADER));
    expect(inReadme).toHaveLength(1);
    expect(readFileSync(join(root, RUN_SNIPPET_FILE), 'utf8')).toBe(inReadme[0]);
  });

  it.each(snippets.map((code, i) => [i + 1, code]))('snippet %i compiles', (_, code) => {
    const dir = mkdtempSync(join(tmpdir(), 'readme-'));
    try {
      const file = join(dir, 'snippet.ts');
      writeFileSync(file, code as string);
      const program = ts.createProgram([file], userCompilerOptions(root));
      const diagnostics = ts
        .getPreEmitDiagnostics(program)
        .map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
      expect(diagnostics).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
