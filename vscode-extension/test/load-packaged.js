// Loads an unpacked .vsix's dist/extension.js (the esbuild bundle) in plain node, with a stand-in for the `vscode`
// module that only VS Code provides: every other module it requires must resolve to a file
// inside the package (so the .vsix carries its runtime dependencies). Prints the exports.
// usage: node test/load-packaged.js UNPACKED/extension
'use strict';
const Module = require('module');
const path = require('path');

const root = path.resolve(process.argv[2]);
const stub = new Proxy(function () {}, {
  get: (_target, key) => (key === 'then' ? undefined : stub),
  apply: () => stub,
  construct: () => stub,
});
const resolve = Module._resolveFilename;
Module._resolveFilename = function (request, parent, ...rest) {
  if (request === 'vscode') return 'vscode';
  const found = resolve.call(this, request, parent, ...rest);
  if (!Module.isBuiltin(found) && !found.startsWith(root + path.sep)) {
    throw new Error(`${request} resolved outside the package: ${found}`);
  }
  return found;
};
require.cache.vscode = { id: 'vscode', filename: 'vscode', loaded: true, exports: stub };
const ext = require(path.join(root, 'dist', 'extension.js'));
const loaded = Object.keys(require.cache).filter((f) => f.startsWith(root + path.sep));
console.log(
  JSON.stringify({
    activate: typeof ext.activate,
    deactivate: typeof ext.deactivate,
    modules: loaded.length,
  })
);
