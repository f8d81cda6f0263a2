// The commands that run the `alpha` CLI (check, build, run a system or a plan: as tasks whose
// output the `$alpha` problem matcher reads, as rust-analyzer's Run lens and `$rustc` do), the
// `alpha` task provider, "Explain refusal" (from a diagnostic's quick fixes), and "Open
// alpha-tui" in a terminal. The server's code lenses call alpha.run, alpha.runPlan,
// alpha.build and alpha.projectRole with one argument `{uri, system | plan, pairing?, role?}`.

import { execFile } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import * as vscode from 'vscode';

import {
  AlphaTaskDefinition,
  PROBLEM_MATCHER,
  TASK_TYPE,
  OFFERED,
  VERBS,
  Verb,
  cliFor,
  refusalName,
  taskArgs,
  taskLabel,
  tuiFor,
} from './tasks';

const LANGUAGE = 'alphadsl';
export const EXPLAIN_SCHEME = 'alpha-explain';

/** What the commands need from the rest of the extension. */
export interface Host {
  /** the server's command line, as started (the CLI is found beside it) */
  server(): { command: string; args: string[] };
  showProjection(args: { uri?: string; plan?: string; role?: string; pairing?: string }): Promise<void>;
}

export interface LensArgument {
  uri?: string;
  system?: string;
  plan?: string;
  pairing?: string;
}

const exists = (p: string): boolean => fs.existsSync(p);

function cli(host: Host): { command: string; args: string[] } {
  return cliFor(host.server(), exists);
}

/** The .alpha file a command works on: the argument's, else the active editor's. */
function fileOf(arg?: LensArgument | vscode.Uri): string | undefined {
  if (arg instanceof vscode.Uri) return arg.fsPath;
  if (arg && typeof arg === 'object' && typeof arg.uri === 'string') {
    return vscode.Uri.parse(arg.uri).fsPath;
  }
  const editor = vscode.window.activeTextEditor;
  if (editor && editor.document.languageId === LANGUAGE) return editor.document.uri.fsPath;
  return undefined;
}

/** A task for a definition: the CLI as a process, its output read by `$alpha`. */
export function makeTask(host: Host, def: AlphaTaskDefinition, scope?: vscode.TaskScope | vscode.WorkspaceFolder): vscode.Task {
  const c = cli(host);
  const cwd = def.file.includes('${') ? undefined : path.dirname(def.file);
  const task = new vscode.Task(
    def,
    scope ?? vscode.TaskScope.Workspace,
    taskLabel(def),
    TASK_TYPE,
    new vscode.ProcessExecution(c.command, [...c.args, ...taskArgs(def)], cwd ? { cwd } : {}),
    [PROBLEM_MATCHER]
  );
  if (def.command === 'run') task.group = vscode.TaskGroup.Test;
  else if (def.command !== 'project') task.group = vscode.TaskGroup.Build;
  return task;
}

/** The tasks offered for the active .alpha file: check, build and run it (and any `alpha`
 * task of tasks.json, project among them, resolved). */
export class AlphaTaskProvider implements vscode.TaskProvider {
  constructor(private readonly host: Host) {}

  provideTasks(): vscode.Task[] {
    const file = fileOf();
    if (!file) return [];
    return OFFERED.map((command) => makeTask(this.host, { type: TASK_TYPE, command, file }));
  }

  resolveTask(task: vscode.Task): vscode.Task | undefined {
    const def = task.definition as Partial<AlphaTaskDefinition>;
    if (!def.command || !VERBS.includes(def.command) || typeof def.file !== 'string') {
      return undefined;
    }
    return makeTask(this.host, def as AlphaTaskDefinition, task.scope);
  }
}

async function runVerb(host: Host, command: Verb, arg?: LensArgument | vscode.Uri): Promise<void> {
  const file = fileOf(arg);
  if (!file) {
    void vscode.window.showErrorMessage('Alpha: open an .alpha file first.');
    return;
  }
  // The CLI reads the file: an editor with unsaved edits would run what it no longer shows.
  const open = vscode.workspace.textDocuments.find((d) => d.uri.fsPath === file);
  if (open?.isDirty) {
    if (!(await open.save())) {
      void vscode.window.showErrorMessage(
        `Alpha: ${vscode.workspace.asRelativePath(open.uri)} has unsaved edits that could not be saved; nothing was started.`,
      );
      return;
    }
    void vscode.window.showInformationMessage(
      `Alpha: saved ${vscode.workspace.asRelativePath(open.uri)} before \`alpha ${command}\`.`,
    );
  }
  const lens = arg instanceof vscode.Uri ? undefined : arg;
  const def: AlphaTaskDefinition = { type: TASK_TYPE, command, file };
  if (lens?.plan) def.plan = lens.plan;
  else if (lens?.system) def.system = lens.system;
  if (lens?.pairing) def.pairing = lens.pairing;
  await vscode.tasks.executeTask(makeTask(host, def));
}

/** `alpha explain NAME`'s text, shown as a read-only document `alpha-explain:/NAME.md`. */
export class ExplainProvider implements vscode.TextDocumentContentProvider {
  constructor(private readonly host: Host) {}

  provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const name = path.basename(uri.path).replace(/\.md$/, '');
    const c = cli(this.host);
    return new Promise((resolve) => {
      execFile(c.command, [...c.args, 'explain', name], { timeout: 30000 }, (err, stdout, stderr) => {
        resolve(err && !stdout ? `# alpha explain ${name}\n\n${(stderr || err.message).trim()}\n` : stdout);
      });
    });
  }
}

async function explain(arg?: unknown): Promise<void> {
  let name = typeof arg === 'string' ? refusalName(arg) : undefined;
  if (!name && arg && typeof arg === 'object' && 'code' in arg) {
    name = refusalName((arg as vscode.Diagnostic).code);
  }
  if (!name) {
    const editor = vscode.window.activeTextEditor;
    const here = editor
      ? vscode.languages
          .getDiagnostics(editor.document.uri)
          .filter((d) => d.source === 'alpha' && d.range.contains(editor.selection.active))
      : [];
    name = refusalName(here[0]?.code);
  }
  if (!name) {
    name = await vscode.window.showInputBox({
      title: 'Alpha: Explain Refusal',
      prompt: 'A refusal name (`alpha explain` lists them)',
      placeHolder: 'unknown-name',
    });
    if (!name) return;
  }
  const doc = await vscode.workspace.openTextDocument(
    vscode.Uri.from({ scheme: EXPLAIN_SCHEME, path: `/${name}.md` })
  );
  await vscode.window.showTextDocument(doc, { preview: true, viewColumn: vscode.ViewColumn.Beside });
}

/** "Explain refusal `NAME`" among the quick fixes of every Alpha diagnostic. */
export class ExplainActions implements vscode.CodeActionProvider {
  provideCodeActions(
    _doc: vscode.TextDocument,
    _range: vscode.Range,
    context: vscode.CodeActionContext
  ): vscode.CodeAction[] {
    const out: vscode.CodeAction[] = [];
    for (const d of context.diagnostics) {
      const name = d.source === 'alpha' ? refusalName(d.code) : undefined;
      if (!name) continue;
      const action = new vscode.CodeAction(`Explain refusal \`${name}\``, vscode.CodeActionKind.QuickFix);
      action.command = { title: action.title, command: 'alpha.explainRefusal', arguments: [name] };
      action.diagnostics = [d];
      out.push(action);
    }
    return out;
  }
}

function openTui(host: Host, arg?: LensArgument | vscode.Uri): vscode.Terminal | undefined {
  const file = fileOf(arg);
  if (!file) {
    void vscode.window.showErrorMessage('Alpha: open an .alpha file first.');
    return undefined;
  }
  const lens = arg instanceof vscode.Uri ? undefined : arg;
  const args = [file, ...(lens?.plan ? ['--plan', lens.plan] : [])];
  const terminal = vscode.window.createTerminal({
    name: `alpha-tui ${path.basename(file)}`,
    shellPath: tuiFor(cli(host), exists),
    shellArgs: args,
    cwd: path.dirname(file),
  });
  terminal.show();
  return terminal;
}

export function registerCommands(context: vscode.ExtensionContext, host: Host): void {
  context.subscriptions.push(
    vscode.commands.registerCommand('alpha.check', (arg?: LensArgument | vscode.Uri) => runVerb(host, 'check', arg)),
    vscode.commands.registerCommand('alpha.build', (arg?: LensArgument | vscode.Uri) => runVerb(host, 'build', arg)),
    vscode.commands.registerCommand('alpha.run', (arg?: LensArgument | vscode.Uri) => runVerb(host, 'run', arg)),
    vscode.commands.registerCommand('alpha.runPlan', async (arg?: LensArgument) => {
      let plan = arg?.plan;
      if (!plan) {
        plan = await vscode.window.showInputBox({ title: 'Alpha: Run Plan', prompt: 'Plan', placeHolder: 'pair' });
        if (!plan) return;
      }
      await runVerb(host, 'run', { ...(arg ?? {}), plan });
    }),
    vscode.commands.registerCommand('alpha.projectRole', (arg?: LensArgument & { role?: string }) =>
      host.showProjection(arg ?? {})
    ),
    vscode.commands.registerCommand('alpha.explainRefusal', (arg?: unknown) => explain(arg)),
    vscode.commands.registerCommand('alpha.openTui', (arg?: LensArgument | vscode.Uri) => openTui(host, arg)),
    vscode.tasks.registerTaskProvider(TASK_TYPE, new AlphaTaskProvider(host)),
    vscode.workspace.registerTextDocumentContentProvider(EXPLAIN_SCHEME, new ExplainProvider(host)),
    vscode.languages.registerCodeActionsProvider({ language: LANGUAGE }, new ExplainActions(), {
      providedCodeActionKinds: [vscode.CodeActionKind.QuickFix],
    })
  );
}
