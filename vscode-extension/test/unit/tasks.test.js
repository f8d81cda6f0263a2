// The editor-free parts of the commands and tasks (src/tasks.ts, compiled to out/tasks.js).
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('path');
const t = require('../../out/tasks.js');
const manifest = require('../../package.json');

test('task command lines: check, build and run of a system, a plan, a pairing', () => {
  const f = '/w/digits.alpha';
  assert.deepEqual(t.taskArgs({ type: 'alpha', command: 'check', file: f, plan: 'pair' }), ['check', f]);
  assert.deepEqual(t.taskArgs({ type: 'alpha', command: 'build', file: f, system: 'digits' }), ['build', f, '--system', 'digits']);
  assert.deepEqual(
    t.taskArgs({ type: 'alpha', command: 'run', file: f, plan: 'pair', pairing: 'local', args: ['--threads', '2'] }),
    ['run', f, '--plan', 'pair', '--pairing', 'local', '--threads', '2']
  );
  assert.equal(t.taskLabel({ type: 'alpha', command: 'run', file: f, plan: 'pair', pairing: 'local' }), 'run digits.alpha plan pair on local');
  // project: a plan's roles' schedules, or one role's
  assert.deepEqual(t.taskArgs({ type: 'alpha', command: 'project', file: f, plan: 'tree' }), ['project', f, '--plan', 'tree']);
  assert.deepEqual(
    t.taskArgs({ type: 'alpha', command: 'project', file: f, plan: 'pair', role: 'worker[1]', pairing: 'local', system: 's' }),
    ['project', f, '--plan', 'pair', '--role', 'worker[1]']
  );
  assert.equal(t.taskLabel({ type: 'alpha', command: 'project', file: f, plan: 'pair', role: 'worker[1]' }), 'project digits.alpha plan pair worker[1]');
  assert.deepEqual([...t.OFFERED], ['check', 'build', 'run']);
});

test('the problem matcher in package.json is the one the code documents and tests', () => {
  const [m] = manifest.contributes.problemMatchers;
  assert.equal(m.name, 'alpha');
  assert.equal(t.PROBLEM_MATCHER, '$' + m.name);
  assert.deepEqual(m.pattern, t.MATCHER_PATTERNS.map((p) => ({ ...p })));
  const [def] = manifest.contributes.taskDefinitions;
  assert.equal(def.type, t.TASK_TYPE);
  assert.deepEqual(def.properties.command.enum, [...t.VERBS]);
});

test('matching rustc-style output', () => {
  const out = [
    'error[unknown-name]: unknown name `ww`',
    ' --> /w/bad.alpha:6:16',
    '  |',
    'warning[unused]: something',
    ' --> bad.alpha:1:2',
    'refused: 1 refusal in /w/bad.alpha',
  ].join('\n');
  assert.deepEqual(t.matchProblems(out), [
    { severity: 'error', code: 'unknown-name', message: 'unknown name `ww`', file: '/w/bad.alpha', line: 6, column: 16 },
    { severity: 'warning', code: 'unused', message: 'something', file: 'bad.alpha', line: 1, column: 2 },
  ]);
});

test('the default server: the workspace .venv, else a .venv-*, else PATH', () => {
  const has = (files) => (p) => files.includes(p);
  const w = '/w';
  const venv = path.join(w, '.venv', 'bin', 'alpha-lsp');
  const test_ = path.join(w, '.venv-test', 'bin', 'alpha-lsp');
  const bench = path.join(w, '.venv-bench', 'bin', 'alpha-lsp');
  const entries = ['.venv', '.venv-test', '.venv-bench', 'src', '.venvx'];
  assert.equal(t.defaultServer([{ path: w, entries }], has([venv, test_, bench])), venv);
  assert.equal(t.defaultServer([{ path: w, entries }], has([test_])), test_);
  assert.equal(t.defaultServer([{ path: w, entries }], has([test_, bench])), bench); // sorted
  assert.equal(t.defaultServer([{ path: w, entries }], has([])), 'alpha-lsp');
  assert.equal(t.defaultServer([], has([venv])), 'alpha-lsp');
});

test('the CLI and alpha-tui beside the server', () => {
  const has = (files) => (p) => files.includes(p);
  assert.deepEqual(t.cliFor({ command: '/v/bin/alpha-lsp', args: [] }, has(['/v/bin/alpha'])), { command: '/v/bin/alpha', args: [] });
  assert.deepEqual(t.cliFor({ command: '/v/bin/alpha-lsp', args: [] }, has([])), { command: 'alpha', args: [] });
  assert.deepEqual(t.cliFor({ command: '/v/bin/python', args: ['-m', 'alpha_lsp'] }, has([])), {
    command: '/v/bin/python',
    args: ['-m', 'alpha_cli.main'],
  });
  assert.equal(t.tuiFor({ command: '/v/bin/alpha', args: [] }, has(['/v/bin/alpha-tui'])), '/v/bin/alpha-tui');
  assert.equal(t.tuiFor({ command: 'alpha', args: [] }, has([])), 'alpha-tui');
});

test('refusal names from diagnostic codes', () => {
  assert.equal(t.refusalName('unknown-name'), 'unknown-name');
  assert.equal(t.refusalName({ value: 'shape-mismatch', target: {} }), 'shape-mismatch');
  assert.equal(t.refusalName(3), undefined);
  assert.equal(t.refusalName('Not A Name'), undefined);
});
