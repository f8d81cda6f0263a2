// The client's editor-free parts (src/common.ts, compiled to out/common.js): `npm run test:unit`.
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const c = require('../../out/common.js');

test('the server command: default, configured, python -m alpha_lsp', () => {
  assert.deepEqual(c.serverCommand({}), { command: 'alpha-lsp', args: [] });
  assert.deepEqual(c.serverCommand({ command: [] }), { command: 'alpha-lsp', args: [] });
  assert.deepEqual(c.serverCommand({ command: 'alpha-lsp --tcp' }), { command: 'alpha-lsp', args: [] });
  assert.deepEqual(
    c.serverCommand({ command: ['${workspaceFolder}/.venv/bin/alpha-lsp', '--log-level', 'INFO'] }, { workspaceFolder: '/w' }),
    { command: '/w/.venv/bin/alpha-lsp', args: ['--log-level', 'INFO'] }
  );
  assert.deepEqual(
    c.serverCommand({ command: ['alpha-lsp'], pythonPath: '~/venv/bin/python' }, { userHome: '/home/u' }),
    { command: '/home/u/venv/bin/python', args: ['-m', 'alpha_lsp'] }
  );
  assert.deepEqual(c.serverCommand({ pythonPath: '  ' }), { command: 'alpha-lsp', args: [] });
});

// What alpha-lsp answers for examples/digits.alpha (LSP SymbolKind numbers).
const symbols = [
  { name: 'digits', kind: 2, children: [{ name: 'model', kind: 12 }] },
  {
    name: 'star', kind: 3, detail: 'for digits',
    children: [
      { name: 'roles', kind: 10, children: [{ name: 'hub', kind: 22 }, { name: 'worker', kind: 22, detail: '[4]' }] },
      { name: 'topology', kind: 7, detail: 'star(hub)' },
    ],
  },
  { name: 'huge', kind: 3, detail: 'for digits', children: [{ name: 'roles', kind: 10, children: [{ name: 'worker', kind: 22, detail: '[200000]' }] }] },
  { name: 'local', kind: 4, detail: 'for star', children: [{ name: 'worker[*]', kind: 8, detail: 'host x86_64' }] },
];

test('plans, their roles and pairings from document symbols', () => {
  const plans = c.plansFromSymbols(symbols);
  assert.deepEqual(plans.map((p) => p.name), ['star', 'huge']);
  assert.deepEqual(plans[0], {
    name: 'star', system: 'digits', pairings: ['local'],
    roles: [{ name: 'hub' }, { name: 'worker', count: 4 }],
  });
  assert.deepEqual(c.roleChoices(plans[0]).map((r) => r.role), ['hub', 'worker[0]', 'worker[1]', 'worker[2]', 'worker[3]']);
  const big = c.roleChoices(plans[1]);
  assert.deepEqual(big.map((r) => r.label), ['worker[0]', 'worker[…]', 'worker[199999]']);
  assert.equal(big[1].role, undefined);
  assert.deepEqual(big[1].family, { name: 'worker', count: 200000 });
  assert.deepEqual(c.plansFromSymbols(null), []);
});

test('the projection document: location, params, text', () => {
  const params = { uri: 'file:///w/examples/digits.alpha', plan: 'pair', role: 'worker[1]' };
  const where = c.projectionLocation(params);
  assert.equal(where.path, '/digits.alpha/pair worker[1].projection');
  assert.deepEqual(c.projectionParams(where.query), params);
  assert.equal(c.projectionParams('not json'), undefined);
  assert.equal(c.projectionParams('{"uri": 1}'), undefined);
  const withPairing = { ...params, pairing: 'local' };
  assert.deepEqual(c.projectionParams(c.projectionLocation(withPairing).query), withPairing);
  assert.equal(
    c.projectionText({ text: 'role worker[1]\n  each round:\n', admission: { text: 'worker[1] on x86_64 host' } }),
    'role worker[1]\n  each round:\n\nmemory admission:\nworker[1] on x86_64 host\n'
  );
  assert.equal(c.projectionText({ text: 'role hub', admission: null }), 'role hub\n');
  assert.match(c.projectionErrorText(params, 'no plan named `ring`'), /^# no projection of worker\[1\] in plan pair\n# no plan named `ring`\n$/);
});
