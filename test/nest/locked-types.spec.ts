// @Locked's compile-time checks: key functions against the method's parameters, onTimeout 'skip' against
// its result. The fixture must compile as it is, and without its `@ts-expect-error` comments fail on
// exactly the lines they mark: otherwise a check that stopped biting would go unnoticed.
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from '@jest/globals';
import ts from 'typescript';
import { userCompilerOptions } from '../support/typescript-options';

const root = process.cwd();
const fixture = join(root, 'test/nest/fixtures/locked-types.fixture.ts');
const source = readFileSync(fixture, 'utf8');
const EXPECT_ERROR = '// @ts-expect-error';

const options = userCompilerOptions(root);

interface Finding {
  line: number;
  message: string;
}

/** Compiles the fixture with `text` as its content; reports the fixture's own diagnostics. */
function compile(text: string, oldProgram?: ts.Program): { program: ts.Program; findings: Finding[] } {
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (name, language, ...rest) =>
    resolve(name) === fixture
      ? ts.createSourceFile(name, text, language, true)
      : getSourceFile(name, language, ...rest);
  const program = ts.createProgram([fixture], options, host, oldProgram);
  const file = program.getSourceFile(fixture);
  if (!file) throw new Error(`${fixture} is not in the program`);
  const findings = [...program.getSyntacticDiagnostics(file), ...program.getSemanticDiagnostics(file)].map(
    (d) => ({
      line: file.getLineAndCharacterOfPosition(d.start ?? 0).line + 1,
      message: ts.flattenDiagnosticMessageText(d.messageText, '\n'),
    }),
  );
  return { program, findings };
}

/** The 1-based lines right below each `@ts-expect-error` comment. */
const marked = source.split('\n').flatMap((line, i) => (line.trim().startsWith(EXPECT_ERROR) ? [i + 2] : []));

describe('@Locked types', () => {
  const original = compile(source);
  // Same line count: each comment loses only its directive.
  const unmarked = compile(source.replaceAll(EXPECT_ERROR, '//'), original.program);

  it('the fixture marks the cases that must not compile', () => {
    expect(marked.length).toBeGreaterThanOrEqual(10);
  });

  it('the fixture compiles: each valid case is accepted, each marked one refused', () => {
    expect(original.findings).toEqual([]);
  });

  it('without the comments, exactly the marked lines fail, once each', () => {
    expect(unmarked.findings.map((f) => f.line).sort((a, b) => a - b)).toEqual(marked);
  });

  it('the errors say what is wrong', () => {
    const at = (line: number) => unmarked.findings.find((f) => f.line === line)?.message ?? '';
    const lineOf = (text: string) => source.split('\n').findIndex((line) => line.includes(text)) + 1;
    expect(at(lineOf('otherType(_dto: Dto)') - 1)).toContain(
      "the key function's parameters do not accept this method's arguments",
    );
    expect(at(lineOf('numberPromise(): Promise<number>') - 1)).toContain(
      "onTimeout 'skip' resolves undefined, which this method's return type does not admit",
    );
  });
});
