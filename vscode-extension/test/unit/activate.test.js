// The bundled extension (dist/extension.js) activated against the stand-in `vscode` module
// (test/vscode-stand-in.js): the commands, the task provider, the status bar item and the
// "Explain refusal" quick fix it registers, and what each command asks of VS Code. The real
// `alpha` CLI of the repository's virtual environment answers `alpha explain`.
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('fs');
const os = require('os');
const path = require('path');
const standIn = require('../vscode-stand-in.js');

const BIN = process.env.ALPHA_VENV_BIN || path.resolve(__dirname, '../../../.venv-test/bin');
const BUNDLE = path.resolve(__dirname, '../../dist/extension.js');

/** A workspace whose `.venv-test/bin` holds the real alpha-lsp, alpha and alpha-tui. */
function workspace() {
  const w = fs.mkdtempSync(path.join(os.tmpdir(), 'alpha-ws-'));
  fs.mkdirSync(path.join(w, '.venv-test', 'bin'), { recursive: true });
  for (const exe of ['alpha-lsp', 'alpha', 'alpha-tui']) {
    fs.symlinkSync(path.join(BIN, exe), path.join(w, '.venv-test', 'bin', exe));
  }
  const file = path.join(w, 'digits.alpha');
  fs.writeFileSync(file, 'system s {\n}\n');
  return { w, file };
}

function activate(overrides) {
  const state = standIn.newState(overrides);
  standIn.install(state);
  delete require.cache[BUNDLE];
  const ext = require(BUNDLE);
  const context = { subscriptions: [], extensionPath: path.resolve(__dirname, '../..') };
  // not awaited: activation registers everything before it starts the server
  const started = ext.activate(context).catch((e) => e);
  return { state, ext, started };
}

const { w, file } = workspace();
const editor = { document: { uri: standIn.Uri.file(file), languageId: 'alphadsl', fileName: file }, selection: { active: { line: 0, character: 0 } } };
const { state } = activate({
  folders: [w],
  activeEditor: editor,
  settings: { 'server.command': undefined },
});
const venv = path.join(w, '.venv-test', 'bin');

test('activation registers the commands, the task provider, the quick fix and the status item', () => {
  for (const id of [
    'alpha.check', 'alpha.build', 'alpha.run', 'alpha.runPlan', 'alpha.projectRole',
    'alpha.explainRefusal', 'alpha.openTui', 'alpha.showProjection', 'alpha.restartServer',
    'alpha.showServerOutput',
  ]) {
    assert.ok(state.commands.has(id), id);
  }
  const manifest = require('../../package.json');
  const declared = manifest.contributes.commands.map((c) => c.command).sort();
  assert.deepEqual([...state.commands.keys()].sort(), declared);
  assert.ok(state.taskProviders.has('alpha'));
  assert.equal(state.codeActionProviders.length, 1);
  const [item] = state.statusItems;
  assert.ok(item.shown);
  assert.match(item.text, /Alpha$/);
  // the server is the workspace's .venv-test one (the settings leave the default)
  assert.match(item.tooltip, new RegExp(path.join(venv, 'alpha-lsp').replace(/[.]/g, '\\.')));
});

test('check, build, run and run plan are tasks of the CLI beside the server, read by $alpha', async () => {
  await state.commands.get('alpha.check')();
  await state.commands.get('alpha.build')({ uri: `file://${file}`, system: 's' });
  await state.commands.get('alpha.runPlan')({ uri: `file://${file}`, plan: 'pair', pairing: 'local' });
  await state.commands.get('alpha.run')({ uri: `file://${file}`, system: 's' });
  const got = state.tasks.map((t) => [t.execution.process, ...t.execution.args]);
  const alpha = path.join(venv, 'alpha');
  assert.deepEqual(got, [
    [alpha, 'check', file],
    [alpha, 'build', file, '--system', 's'],
    [alpha, 'run', file, '--plan', 'pair', '--pairing', 'local'],
    [alpha, 'run', file, '--system', 's'],
  ]);
  for (const t of state.tasks) {
    assert.deepEqual(t.problemMatchers, ['$alpha']);
    assert.equal(t.source, 'alpha');
    assert.equal(t.execution.options.cwd, w);
  }
  // run plan without an argument asks for the plan
  state.inputs.push('tree');
  await state.commands.get('alpha.runPlan')();
  assert.deepEqual(state.tasks.at(-1).execution.args, ['run', file, '--plan', 'tree']);
});

test('the task provider offers check, build and run of the active file, and resolves tasks.json entries', () => {
  const provider = state.taskProviders.get('alpha');
  const offered = provider.provideTasks();
  assert.deepEqual(offered.map((t) => t.execution.args), [['check', file], ['build', file], ['run', file]]);
  assert.deepEqual(offered.map((t) => t.group.id), ['build', 'build', 'test']);
  const resolved = provider.resolveTask({ definition: { type: 'alpha', command: 'run', file: '${file}', plan: 'pair' }, scope: 2 });
  assert.deepEqual(resolved.execution.args, ['run', '${file}', '--plan', 'pair']);
  assert.equal(provider.resolveTask({ definition: { type: 'alpha', command: 'deploy', file: 'x' } }), undefined);
  // a tasks.json `project` entry: the plan's (or one role's) schedules, in no task group
  const projected = provider.resolveTask({ definition: { type: 'alpha', command: 'project', file: '${file}', plan: 'pair', role: 'worker[1]' }, scope: 2 });
  assert.deepEqual(projected.execution.args, ['project', '${file}', '--plan', 'pair', '--role', 'worker[1]']);
  assert.equal(projected.group, undefined);
});

test('explain refusal: a quick fix on every Alpha diagnostic, showing `alpha explain NAME`', async () => {
  const { provider } = state.codeActionProviders[0];
  const diagnostic = { source: 'alpha', code: { value: 'unknown-name', target: standIn.Uri.parse('file:///docs/refusals.md#unknown-name') } };
  const actions = provider.provideCodeActions({}, {}, { diagnostics: [diagnostic, { source: 'other', code: 'x' }] });
  assert.equal(actions.length, 1);
  assert.equal(actions[0].title, 'Explain refusal `unknown-name`');
  assert.deepEqual(actions[0].command.arguments, ['unknown-name']);
  await state.commands.get(actions[0].command.command)(...actions[0].command.arguments);
  const { doc } = state.shown.at(-1);
  assert.equal(doc.uri.scheme, 'alpha-explain');
  assert.match(doc.getText(), /unknown-name/);
  assert.match(doc.getText(), /did you mean|name/i);
});

test('open alpha-tui: a terminal running alpha-tui on the file', () => {
  const terminal = state.commands.get('alpha.openTui')({ uri: `file://${file}`, plan: 'pair' });
  assert.equal(terminal.options.shellPath, path.join(venv, 'alpha-tui'));
  assert.deepEqual(terminal.options.shellArgs, [file, '--plan', 'pair']);
  assert.ok(terminal.shown);
});

test('project role (the lens) opens the projection for its arguments', async () => {
  await state.commands.get('alpha.projectRole')({ uri: `file://${file}`, plan: 'pair', role: 'worker[0]' });
  // the stand-in cannot carry a language client's connection, so the server never runs here:
  // the command says so (in VS Code it shows the projection, as alpha.showProjection does)
  assert.match(state.errors.at(-1), /language server is not running/);
  // and the status item says the server stopped, a click restarting it
  const [item] = state.statusItems;
  assert.match(item.text, /^\$\(error\) Alpha$/);
  assert.equal(item.command, 'alpha.restartServer');
  assert.match(state.errors.find((e) => e.startsWith('Alpha: could not start')), new RegExp(venv.replace(/[.]/g, '\\.')));
});
