// A stand-in for the `vscode` module, which only VS Code provides: the parts of the API the
// extension's own code calls are small working fakes that record what was asked of them
// (commands, tasks, terminals, documents shown, the status bar); everything else (what
// vscode-languageclient reaches for) is an inert proxy. `install(state)` makes
// require('vscode') return it. Used by test/unit/activate.test.js and test/load-packaged.js.
'use strict';
const Module = require('module');
const path = require('path');

const inert = new Proxy(function () {}, {
  get: (_target, key) => (key === 'then' ? undefined : inert),
  apply: () => inert,
  construct: () => inert,
});

class Uri {
  constructor(scheme, p, query = '') {
    this.scheme = scheme;
    this.path = p;
    this.query = query;
    this.fsPath = scheme === 'file' ? p : p;
  }
  static file(p) {
    return new Uri('file', p);
  }
  static parse(s) {
    const m = /^([a-z][a-z0-9+.-]*):(?:\/\/)?([^?]*)(?:\?(.*))?$/i.exec(s);
    if (!m) return new Uri('file', s);
    return new Uri(m[1], decodeURIComponent(m[2]), m[3] ?? '');
  }
  static from(parts) {
    return new Uri(parts.scheme, parts.path ?? '', parts.query ?? '');
  }
  toString() {
    return this.scheme === 'file' ? `file://${this.path}` : `${this.scheme}:${this.path}`;
  }
}

class EventEmitter {
  constructor() {
    this.listeners = [];
    this.event = (f) => {
      this.listeners.push(f);
      return { dispose() {} };
    };
  }
  fire(x) {
    for (const f of this.listeners) f(x);
  }
  dispose() {}
}

class Task {
  constructor(definition, scope, name, source, execution, problemMatchers) {
    Object.assign(this, { definition, scope, name, source, execution, problemMatchers });
  }
}
class ProcessExecution {
  constructor(process, args, options) {
    Object.assign(this, { process, args, options });
  }
}
class CodeAction {
  constructor(title, kind) {
    Object.assign(this, { title, kind });
  }
}
class ThemeColor {
  constructor(id) {
    this.id = id;
  }
}
class Position {
  constructor(line, character) {
    Object.assign(this, { line, character });
  }
}
class Range {
  constructor(start, end) {
    Object.assign(this, { start, end });
  }
  contains(p) {
    const after = (a, b) => a.line > b.line || (a.line === b.line && a.character >= b.character);
    return after(p, this.start) && after(this.end, p);
  }
}

function make(state) {
  const disposable = { dispose() {} };
  const vscode = {
    version: '1.91.0',
    Uri,
    EventEmitter,
    Task,
    ProcessExecution,
    CodeAction,
    ThemeColor,
    Position,
    Range,
    TaskScope: { Global: 1, Workspace: 2 },
    TaskGroup: { Build: { id: 'build' }, Test: { id: 'test' } },
    CodeActionKind: { QuickFix: { value: 'quickfix' } },
    StatusBarAlignment: { Left: 1, Right: 2 },
    ViewColumn: { Beside: -2, Active: -1 },
    commands: {
      registerCommand(id, fn) {
        state.commands.set(id, fn);
        return disposable;
      },
      executeCommand(id, ...args) {
        state.executed.push([id, ...args]);
        const fn = state.commands.get(id);
        return Promise.resolve(fn ? fn(...args) : undefined);
      },
    },
    tasks: {
      registerTaskProvider(type, provider) {
        state.taskProviders.set(type, provider);
        return disposable;
      },
      executeTask(task) {
        state.tasks.push(task);
        return Promise.resolve({ task });
      },
    },
    window: {
      activeTextEditor: state.activeEditor,
      visibleTextEditors: state.activeEditor ? [state.activeEditor] : [],
      createStatusBarItem(id, alignment, priority) {
        const item = { id, alignment, priority, shown: false, show() { this.shown = true; }, dispose() {} };
        state.statusItems.push(item);
        return item;
      },
      createTerminal(options) {
        const terminal = { options, shown: false, show() { this.shown = true; } };
        state.terminals.push(terminal);
        return terminal;
      },
      showErrorMessage(...args) {
        state.errors.push(args[0]);
        return Promise.resolve(undefined);
      },
      showInformationMessage: () => Promise.resolve(undefined),
      showInputBox: () => Promise.resolve(state.inputs.shift()),
      showQuickPick: () => Promise.resolve(undefined),
      showTextDocument(doc, options) {
        state.shown.push({ doc, options });
        return Promise.resolve(inert);
      },
      createOutputChannel: () => inert,
    },
    workspace: {
      workspaceFolders: state.folders.map((f) => ({ uri: Uri.file(f), name: path.basename(f) })),
      textDocuments: [],
      getConfiguration: () => ({
        get: (key, fallback) => (key in state.settings ? state.settings[key] : fallback),
        inspect: (key) => ({ key, globalValue: state.settings[key] }),
        has: (key) => key in state.settings,
      }),
      registerTextDocumentContentProvider(scheme, provider) {
        state.contentProviders.set(scheme, provider);
        return disposable;
      },
      async openTextDocument(uri) {
        const provider = state.contentProviders.get(uri.scheme);
        const text = provider ? await provider.provideTextDocumentContent(uri, inert) : '';
        return { uri, getText: () => text };
      },
      onDidChangeTextDocument: () => disposable,
      onDidChangeConfiguration: () => disposable,
      createFileSystemWatcher: () => inert,
    },
    languages: {
      registerCodeActionsProvider(selector, provider, metadata) {
        state.codeActionProviders.push({ selector, provider, metadata });
        return disposable;
      },
      getDiagnostics: () => state.diagnostics,
    },
  };
  // what the extension's code does not call (vscode-languageclient's needs) is inert
  const fallback = (t) => new Proxy(t, { get: (o, key) => (key in o ? o[key] : inert) });
  for (const ns of ['commands', 'tasks', 'window', 'workspace', 'languages']) {
    vscode[ns] = fallback(vscode[ns]);
  }
  return fallback(vscode);
}

/** A fresh state for one activation. */
function newState(overrides = {}) {
  return {
    commands: new Map(),
    executed: [],
    taskProviders: new Map(),
    tasks: [],
    statusItems: [],
    terminals: [],
    errors: [],
    inputs: [],
    shown: [],
    contentProviders: new Map(),
    codeActionProviders: [],
    diagnostics: [],
    settings: {},
    folders: [],
    activeEditor: undefined,
    ...overrides,
  };
}

/** Makes require('vscode') give the stand-in for `state` (the inert proxy when none). */
function install(state) {
  const resolve = Module._resolveFilename;
  if (!Module._alphaStandIn) {
    Module._resolveFilename = function (request, ...rest) {
      return request === 'vscode' ? 'vscode' : resolve.call(this, request, ...rest);
    };
    Module._alphaStandIn = true;
  }
  const exports = state ? make(state) : inert;
  require.cache.vscode = { id: 'vscode', filename: 'vscode', loaded: true, exports };
  return exports;
}

module.exports = { install, newState, inert, Uri };
