// The Alpha extension: starts alpha-lsp over stdio for `alphadsl` documents (from the
// workspace's `.venv` when the settings leave the default), shows a role's projected schedule
// (the custom request `alpha/projection`, docs/lsp.md) as a read-only virtual document, the
// server's state in the status bar, and the check/build/run commands and tasks (commands.ts).

import * as fs from 'fs';
import * as os from 'os';
import * as vscode from 'vscode';
import {
  DocumentSymbolRequest,
  LanguageClient,
  LanguageClientOptions,
  RequestType,
  ServerOptions,
  State,
  TransportKind,
} from 'vscode-languageclient/node';

import {
  LspSymbol,
  PlanInfo,
  PROJECTION_SCHEME,
  ProjectionParams,
  ProjectionResult,
  plansFromSymbols,
  projectionErrorText,
  projectionLocation,
  projectionParams,
  projectionText,
  roleChoices,
  ServerCommand,
  serverCommand,
} from './common';
import { registerCommands } from './commands';
import { ServerStatus } from './status';
import { defaultServer } from './tasks';

const LANGUAGE = 'alphadsl';
const ProjectionRequest = new RequestType<ProjectionParams, ProjectionResult, void>(
  'alpha/projection'
);

let client: LanguageClient | undefined;
let starting: Promise<void> | undefined;
let status: ServerStatus | undefined;

function entries(folder: string): string[] {
  try {
    return fs.readdirSync(folder);
  } catch {
    return [];
  }
}

/**
 * The server's command line from the settings; when they leave the default (`["alpha-lsp"]`,
 * no python path), the `bin/alpha-lsp` of the workspace's `.venv` or `.venv-*` if there is one.
 */
export function resolvedServer(): ServerCommand {
  const config = vscode.workspace.getConfiguration('alpha');
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  const found = serverCommand(
    {
      command: config.get<unknown>('server.command'),
      pythonPath: config.get<unknown>('server.pythonPath'),
    },
    { workspaceFolder: folder, userHome: os.homedir() }
  );
  const set = config.inspect<unknown>('server.command');
  const chosen =
    set !== undefined &&
    (set.globalValue !== undefined ||
      set.workspaceValue !== undefined ||
      set.workspaceFolderValue !== undefined);
  if (chosen || config.get<string>('server.pythonPath')) return found;
  const folders = (vscode.workspace.workspaceFolders ?? []).map((f) => ({
    path: f.uri.fsPath,
    entries: entries(f.uri.fsPath),
  }));
  return { command: defaultServer(folders, (p) => fs.existsSync(p)), args: found.args };
}

function createClient(): LanguageClient {
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  const { command, args } = resolvedServer();
  const executable = {
    command,
    args,
    transport: TransportKind.stdio,
    options: folder ? { cwd: folder } : undefined,
  };
  const serverOptions: ServerOptions = { run: executable, debug: executable };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [
      { scheme: 'file', language: LANGUAGE },
      { scheme: 'untitled', language: LANGUAGE },
    ],
    synchronize: {
      // data files that a system reads (table("data.csv", ...)) change its diagnostics
      fileEvents: vscode.workspace.createFileSystemWatcher('**/*.{alpha,csv}'),
    },
  };
  // The id `alpha` makes the client read `alpha.trace.server`.
  return new LanguageClient('alpha', 'Alpha Language Server', serverOptions, clientOptions);
}

async function startClient(): Promise<void> {
  const server = resolvedServer();
  const line = [server.command, ...server.args].join(' ');
  status?.set('starting', line);
  const next = createClient();
  client = next;
  next.onDidChangeState((e) => {
    if (client !== next) return;
    status?.set(e.newState === State.Running ? 'running' : e.newState === State.Starting ? 'starting' : 'stopped', line);
  });
  try {
    await next.start();
    status?.set('running', line);
  } catch (err) {
    status?.set('stopped', line, message(err));
    const config = vscode.workspace.getConfiguration('alpha');
    const how = config.get<string>('server.pythonPath')
      ? `alpha.server.pythonPath (${line})`
      : `alpha.server.command (${line})`;
    // not awaited: activation must not wait for the user to dismiss the message
    void vscode.window
      .showErrorMessage(
        `Alpha: could not start the language server from ${how}: ${message(err)}. ` +
          'Install the `alpha` package (which provides alpha-lsp) or set the command.',
        'Open Settings'
      )
      .then((choice) => {
        if (choice === 'Open Settings') {
          void vscode.commands.executeCommand('workbench.action.openSettings', 'alpha.server');
        }
      });
  }
}

async function stopClient(): Promise<void> {
  const old = client;
  client = undefined;
  if (old && old.state !== State.Stopped) {
    await old.stop().catch(() => undefined);
  }
}

async function restartClient(): Promise<void> {
  await stopClient();
  starting = startClient();
  await starting;
}

async function runningClient(): Promise<LanguageClient | undefined> {
  await starting;
  if (client && client.state === State.Running) {
    return client;
  }
  void vscode.window.showErrorMessage('Alpha: the language server is not running.');
  return undefined;
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** The virtual documents `alpha-projection:/FILE/PLAN ROLE.projection?{params}`. */
class ProjectionProvider implements vscode.TextDocumentContentProvider {
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;

  async provideTextDocumentContent(
    uri: vscode.Uri,
    token: vscode.CancellationToken
  ): Promise<string> {
    const params = projectionParams(uri.query);
    if (!params) {
      return `# not an Alpha projection: ${uri.toString()}\n`;
    }
    await starting;
    if (!client || client.state !== State.Running) {
      return projectionErrorText(params, 'the language server is not running');
    }
    try {
      return projectionText(await client.sendRequest(ProjectionRequest, params, token));
    } catch (err) {
      return projectionErrorText(params, message(err));
    }
  }

  /** Re-asks every open projection of `source` (after an edit of it). */
  refresh(source: string): void {
    for (const doc of vscode.workspace.textDocuments) {
      if (doc.uri.scheme === PROJECTION_SCHEME && projectionParams(doc.uri.query)?.uri === source) {
        this.changed.fire(doc.uri);
      }
    }
  }

  dispose(): void {
    this.changed.dispose();
  }
}

async function pickPlan(plans: PlanInfo[]): Promise<PlanInfo | undefined> {
  if (plans.length === 0) {
    const name = await vscode.window.showInputBox({
      title: 'Alpha: Show Role Projection',
      prompt: 'Plan (the server listed none in this file)',
      placeHolder: 'pair',
    });
    return name ? { name, roles: [], pairings: [] } : undefined;
  }
  const picked = await vscode.window.showQuickPick(
    plans.map((plan) => ({
      label: plan.name,
      description: plan.system ? `for ${plan.system}` : undefined,
      detail: plan.roles.map((r) => (r.count === undefined ? r.name : `${r.name}[${r.count}]`)).join(', '),
      plan,
    })),
    { title: 'Alpha: Show Role Projection', placeHolder: 'Plan' }
  );
  return picked?.plan;
}

async function pickRole(plan: PlanInfo): Promise<string | undefined> {
  const choices = roleChoices(plan);
  if (choices.length === 0) {
    return vscode.window.showInputBox({
      title: `Alpha: Show Role Projection (plan ${plan.name})`,
      prompt: 'Role',
      placeHolder: 'worker[0]',
    });
  }
  const picked = await vscode.window.showQuickPick(choices, {
    title: `Alpha: Show Role Projection (plan ${plan.name})`,
    placeHolder: 'Role',
  });
  if (!picked) return undefined;
  if (picked.role !== undefined) return picked.role;
  const family = picked.family!;
  const count = family.count ?? 0;
  const index = await vscode.window.showInputBox({
    title: `Alpha: Show Role Projection (plan ${plan.name})`,
    prompt: `Index of the ${family.name} (0 to ${count - 1})`,
    validateInput: (s) =>
      /^[0-9]+$/.test(s.trim()) && Number(s) < count ? undefined : `an index from 0 to ${count - 1}`,
  });
  return index === undefined ? undefined : `${family.name}[${Number(index)}]`;
}

async function pickPairing(plan: PlanInfo): Promise<string | undefined | null> {
  if (plan.pairings.length === 0) return undefined;
  const none = { label: 'default host profile', pairing: undefined as string | undefined };
  const picked = await vscode.window.showQuickPick(
    [none, ...plan.pairings.map((p) => ({ label: p, description: 'pairing', pairing: p }))],
    { title: 'Alpha: memory admission against', placeHolder: 'Pairing' }
  );
  return picked === undefined ? null : picked.pairing;
}

/**
 * `alpha.showProjection`: asks for a plan, a role (and a pairing when the plan has some) and
 * opens the projection beside the source. Arguments, all optional, skip the questions:
 * `{uri, plan, role, pairing}`.
 */
async function showProjection(provider: ProjectionProvider, args?: Partial<ProjectionParams>) {
  const editor = vscode.window.activeTextEditor;
  const sourceUri = args?.uri
    ? vscode.Uri.parse(args.uri)
    : editor?.document.languageId === LANGUAGE
      ? editor.document.uri
      : vscode.window.visibleTextEditors.find((e) => e.document.languageId === LANGUAGE)?.document
          .uri;
  if (!sourceUri) {
    void vscode.window.showErrorMessage('Alpha: open an .alpha file first.');
    return;
  }
  const lc = await runningClient();
  if (!lc) return;
  const uri = lc.code2ProtocolConverter.asUri(sourceUri);

  let plans: PlanInfo[] = [];
  try {
    const symbols = (await lc.sendRequest(DocumentSymbolRequest.type, {
      textDocument: { uri },
    })) as LspSymbol[] | null;
    plans = plansFromSymbols(symbols);
  } catch {
    // no symbols: ask for the names instead
  }
  const plan = args?.plan
    ? (plans.find((p) => p.name === args.plan) ?? { name: args.plan, roles: [], pairings: [] })
    : await pickPlan(plans);
  if (!plan) return;
  const role = args?.role ?? (await pickRole(plan));
  if (!role) return;
  let pairing: string | undefined;
  if (args?.pairing !== undefined) {
    pairing = args.pairing;
  } else if (args?.role === undefined) {
    const picked = await pickPairing(plan);
    if (picked === null) return;
    pairing = picked;
  }

  const params: ProjectionParams = { uri, plan: plan.name, role, ...(pairing ? { pairing } : {}) };
  const where = projectionLocation(params);
  const target = vscode.Uri.from({ scheme: PROJECTION_SCHEME, path: where.path, query: where.query });
  const doc = await vscode.workspace.openTextDocument(target);
  provider.refresh(uri); // a projection shown before is re-asked
  await vscode.window.showTextDocument(doc, {
    preview: false,
    viewColumn: vscode.ViewColumn.Beside,
    preserveFocus: false,
  });
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const provider = new ProjectionProvider();
  status = new ServerStatus();
  registerCommands(context, {
    server: resolvedServer,
    showProjection: (args) => showProjection(provider, args),
  });
  context.subscriptions.push(
    status,
    vscode.commands.registerCommand('alpha.showServerOutput', () => client?.outputChannel.show(true)),
    provider,
    vscode.workspace.registerTextDocumentContentProvider(PROJECTION_SCHEME, provider),
    vscode.commands.registerCommand('alpha.showProjection', (args?: Partial<ProjectionParams>) =>
      showProjection(provider, args)
    ),
    vscode.commands.registerCommand('alpha.restartServer', () => restartClient())
  );

  // Projections follow the edits of their source, a little after the server has re-checked.
  let timer: NodeJS.Timeout | undefined;
  context.subscriptions.push(
    vscode.workspace.onDidChangeTextDocument((e) => {
      if (e.document.languageId !== LANGUAGE || !client) return;
      const source = client.code2ProtocolConverter.asUri(e.document.uri);
      if (timer) clearTimeout(timer);
      timer = setTimeout(() => provider.refresh(source), 300);
    }),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration('alpha.server')) {
        void restartClient();
      }
    }),
    { dispose: () => timer && clearTimeout(timer) }
  );

  starting = startClient();
  await starting;
}

export async function deactivate(): Promise<void> {
  await stopClient();
}
