// The parts of the client that do not need VS Code: the server's command line from the settings,
// the plans and roles of a document from its symbols, the projection's virtual document.
// Tested with node's test runner (test/common.test.js) without an editor.

/** LSP SymbolKind values (the protocol's, 1-based; not vscode.SymbolKind). */
export const SymbolKind = { Namespace: 3, Package: 4, Enum: 10, EnumMember: 22 } as const;

/** The fields of an LSP DocumentSymbol that the client reads. */
export interface LspSymbol {
  name: string;
  kind: number;
  detail?: string;
  children?: LspSymbol[];
}

export interface ServerSettings {
  /** alpha.server.command */
  command?: unknown;
  /** alpha.server.pythonPath */
  pythonPath?: unknown;
}

export interface ServerCommand {
  command: string;
  args: string[];
}

export const DEFAULT_COMMAND: readonly string[] = ['alpha-lsp'];

/**
 * The server's command line: `[pythonPath, "-m", "alpha_lsp"]` when a Python interpreter is
 * set, else `alpha.server.command` (default `["alpha-lsp"]`). `${workspaceFolder}`,
 * `${userHome}` and a leading `~/` are expanded.
 */
export function serverCommand(
  settings: ServerSettings,
  vars: { workspaceFolder?: string; userHome?: string } = {}
): ServerCommand {
  const expand = (s: string): string => {
    let out = s;
    if (vars.userHome && (out === '~' || out.startsWith('~/'))) {
      out = vars.userHome + out.slice(1);
    }
    if (vars.workspaceFolder !== undefined) {
      out = out.split('${workspaceFolder}').join(vars.workspaceFolder);
    }
    if (vars.userHome !== undefined) {
      out = out.split('${userHome}').join(vars.userHome);
    }
    return out;
  };
  const python = typeof settings.pythonPath === 'string' ? settings.pythonPath.trim() : '';
  if (python) {
    return { command: expand(python), args: ['-m', 'alpha_lsp'] };
  }
  const given = settings.command;
  const words =
    Array.isArray(given) && given.length > 0 && given.every((w) => typeof w === 'string' && w)
      ? (given as string[])
      : [...DEFAULT_COMMAND];
  const [command, ...args] = words.map(expand);
  return { command, args };
}

/** One plan of a document, as its symbols show it. */
export interface PlanInfo {
  name: string;
  /** the system it is for (the symbol's detail `for digits`) */
  system?: string;
  /** role families and singletons: `{name: "worker", count: 8}`, `{name: "hub"}` */
  roles: RoleFamily[];
  /** the pairings of the document that are for this plan */
  pairings: string[];
}

export interface RoleFamily {
  name: string;
  /** members in a family `worker[8]`; undefined for a singleton `hub` */
  count?: number;
}

function forTarget(detail: string | undefined): string | undefined {
  const m = /^for\s+([A-Za-z_][A-Za-z0-9_]*)/.exec(detail ?? '');
  return m ? m[1] : undefined;
}

/** The plans of a document from its `textDocument/documentSymbol` answer. */
export function plansFromSymbols(symbols: readonly LspSymbol[] | null | undefined): PlanInfo[] {
  const all = symbols ?? [];
  const pairings = all.filter((s) => s.kind === SymbolKind.Package);
  return all
    .filter((s) => s.kind === SymbolKind.Namespace)
    .map((plan) => {
      const roles: RoleFamily[] = [];
      for (const item of plan.children ?? []) {
        if (item.kind !== SymbolKind.Enum) continue;
        for (const role of item.children ?? []) {
          if (role.kind !== SymbolKind.EnumMember) continue;
          const m = /^\[\s*([0-9]+)\s*\]$/.exec(role.detail ?? '');
          roles.push(m ? { name: role.name, count: Number(m[1]) } : { name: role.name });
        }
      }
      return {
        name: plan.name,
        system: forTarget(plan.detail),
        roles,
        pairings: pairings.filter((p) => forTarget(p.detail) === plan.name).map((p) => p.name),
      };
    });
}

/** Past this many members a family is offered as its first and last members and "enter an index". */
export const MAX_LISTED_MEMBERS = 64;

export interface RoleChoice {
  label: string;
  /** the role to project; undefined: ask for an index in `family` */
  role?: string;
  family?: RoleFamily;
}

/** The roles a user may pick for a plan (members of families spelled `worker[3]`). */
export function roleChoices(plan: PlanInfo): RoleChoice[] {
  const out: RoleChoice[] = [];
  for (const family of plan.roles) {
    if (family.count === undefined) {
      out.push({ label: family.name, role: family.name });
    } else if (family.count <= MAX_LISTED_MEMBERS) {
      for (let i = 0; i < family.count; i++) {
        const role = `${family.name}[${i}]`;
        out.push({ label: role, role });
      }
    } else {
      const first = `${family.name}[0]`;
      const last = `${family.name}[${family.count - 1}]`;
      out.push({ label: first, role: first });
      out.push({ label: `${family.name}[…]`, family });
      out.push({ label: last, role: last });
    }
  }
  return out;
}

/** The params of `alpha/projection` (docs/lsp.md). */
export interface ProjectionParams {
  uri: string;
  plan: string;
  role: string;
  pairing?: string;
}

export interface ProjectionResult {
  plan: string;
  role: string;
  index: number;
  roles: number;
  text: string;
  ops: { kind: string; lo: number; hi: number; link: number | null; text: string }[];
  links: { peer: number; peerName: string; accept: boolean }[];
  admission?: { text: string } | null;
}

export const PROJECTION_SCHEME = 'alpha-projection';

/** The path and query of the virtual document that shows one role's projection. */
export function projectionLocation(params: ProjectionParams): { path: string; query: string } {
  const file = decodeURIComponent(params.uri.replace(/[?#].*$/, '').replace(/^.*\//, ''));
  const pairing = params.pairing ? ` on ${params.pairing}` : '';
  return {
    path: `/${file}/${params.plan} ${params.role}${pairing}.projection`,
    query: JSON.stringify(params),
  };
}

/** The params back from a virtual document's query; undefined when it is not one of ours. */
export function projectionParams(query: string): ProjectionParams | undefined {
  try {
    const p = JSON.parse(query) as Partial<ProjectionParams>;
    if (typeof p.uri === 'string' && typeof p.plan === 'string' && typeof p.role === 'string') {
      return {
        uri: p.uri,
        plan: p.plan,
        role: p.role,
        ...(typeof p.pairing === 'string' ? { pairing: p.pairing } : {}),
      };
    }
  } catch {
    // not JSON: not ours
  }
  return undefined;
}

/** What the virtual document shows: the role's schedule, then its memory admission. */
export function projectionText(result: ProjectionResult): string {
  let text = result.text.replace(/\s+$/, '') + '\n';
  if (result.admission && result.admission.text) {
    text += '\nmemory admission:\n' + result.admission.text.replace(/\s+$/, '') + '\n';
  }
  return text;
}

/** What the virtual document shows when the server refused the request. */
export function projectionErrorText(params: ProjectionParams, message: string): string {
  return `# no projection of ${params.role} in plan ${params.plan}\n# ${message.replace(/\n/g, '\n# ')}\n`;
}
