// A jest reporter for CI: every failed test's project, file, name and message is appended to the file
// LOCK_TEST_FAILURE_LOG names, so a run whose log is thousands of lines long can end with what failed,
// whichever of its jest runs (the whole suite, the busy one, Node 24, Redis 8) it was in.
import { appendFileSync } from 'node:fs';
import { relative } from 'node:path';

/** The first lines of a failure's message: the assertion or error and where it was thrown. */
const MESSAGE_LINES = 20;
/** Stack frames of jest and Node themselves say nothing about the failure. */
const NOISE = /^\s*at .*(\/node_modules\/|node:internal|\(<anonymous>\))/;

export default class FailureLogReporter {
  constructor(globalConfig) {
    this.rootDir = globalConfig.rootDir;
    this.file = process.env.LOCK_TEST_FAILURE_LOG;
  }

  onTestResult(test, result) {
    if (!this.file) return;
    const project = test.context.config.displayName?.name ?? '';
    const where = `[${project}] ${relative(this.rootDir, result.testFilePath)}`;
    const entries = [];
    // A suite that could not run (a syntax error, a failing beforeAll) has no failed test of its own.
    if (result.testExecError)
      entries.push(`${where}: the suite failed to run\n${indent(result.testExecError.message)}`);
    for (const assertion of result.testResults) {
      if (assertion.status !== 'failed') continue;
      const name = [...assertion.ancestorTitles, assertion.title].join(' › ');
      entries.push(`${where} › ${name}\n${indent(assertion.failureMessages.join('\n'))}`);
    }
    if (entries.length) appendFileSync(this.file, `${entries.join('\n')}\n`);
  }
}

function indent(message) {
  return message
    .split('\n')
    .filter((line) => !NOISE.test(line))
    .slice(0, MESSAGE_LINES)
    .map((line) => `    ${line}`)
    .join('\n');
}
