// Every TypeScript snippet in the README must compile against the real API: a doc example that does
// not compile is a bug.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from '@jest/globals';
import ts from 'typescript';
import { userCompilerOptions } from './support/typescript-options';

const root = process.cwd();
const documents = ['README.md', 'docs/recipes.md'];
const snippets = documents.flatMap((doc) =>
  [...readFileSync(join(root, doc), 'utf8').matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]),
);

describe('README and docs/recipes.md', () => {
  it('has TypeScript snippets', () => {
    expect(snippets.length).toBeGreaterThan(0);
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
