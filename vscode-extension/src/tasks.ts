// The parts of the check/build/run commands and tasks that do not need VS Code: where the
// server and the `alpha` CLI are (the repository's `.venv` first), the command line of each
// task, the problem matcher's patterns. Tested with node's test runner (test/unit/tasks.test.js).

import * as path from 'path';

/** The task type of `tasks.json` entries: `{"type": "alpha", "command": "check", "file": …}`. */
export const TASK_TYPE = 'alpha';
/** The problem matcher contributed in package.json (`contributes.problemMatchers`). */
export const PROBLEM_MATCHER = '$alpha';

export type Verb = 'check' | 'build' | 'run' | 'project';
/** The verbs of `tasks.json` entries: `project` prints a plan's roles' schedules (`--plan`). */
export const VERBS: readonly Verb[] = ['check', 'build', 'run', 'project'];
/** The tasks offered for the active file (project needs a plan, so it is not among them). */
export const OFFERED: readonly Verb[] = ['check', 'build', 'run'];

/** A task's definition, as tasks.json spells it. */
export interface AlphaTaskDefinition {
  type: typeof TASK_TYPE;
  command: Verb;
  /** the .alpha file; `${file}` is the active editor's */
  file: string;
  system?: string;
  plan?: string;
  pairing?: string;
  /** `project`: only this role, e.g. `worker[1]` */
  role?: string;
  /** more arguments for the CLI, e.g. ["--threads", "2"] */
  args?: string[];
}

/** The CLI's arguments for a task: `check FILE`, `build FILE --plan P --pairing Q`,
 * `project FILE --plan P --role R`, … */
export function taskArgs(def: AlphaTaskDefinition): string[] {
  const out: string[] = [def.command, def.file];
  if (def.command === 'project') {
    if (def.plan) out.push('--plan', def.plan);
    if (def.role) out.push('--role', def.role);
  } else if (def.command !== 'check') {
    if (def.plan) out.push('--plan', def.plan);
    else if (def.system) out.push('--system', def.system);
    if (def.plan && def.pairing) out.push('--pairing', def.pairing);
  }
  return out.concat(def.args ?? []);
}

/** The label VS Code shows for a task. */
export function taskLabel(def: AlphaTaskDefinition): string {
  const what = def.plan ? `plan ${def.plan}` : def.system ? `system ${def.system}` : '';
  const on =
    def.command === 'project'
      ? def.role
        ? ` ${def.role}`
        : ''
      : def.pairing
        ? ` on ${def.pairing}`
        : '';
  return `${def.command} ${path.basename(def.file)}${what ? ' ' + what : ''}${on}`;
}

/**
 * The problem matcher's patterns (package.json holds the same; a test keeps the two equal):
 * `alpha check` prints each refusal as rustc prints an error,
 * `error[unknown-name]: unknown name `ww`` then ` --> FILE:LINE:COLUMN` (1-based).
 */
export const MATCHER_PATTERNS = [
  { regexp: '^(error|warning)\\[([a-z0-9-]+)\\]: (.*)$', severity: 1, code: 2, message: 3 },
  { regexp: '^\\s*--> (.+):(\\d+):(\\d+)$', file: 1, line: 2, column: 3 },
] as const;

export interface Problem {
  severity: string;
  code: string;
  message: string;
  file: string;
  line: number;
  column: number;
}

/** What VS Code's multi-line matcher finds in a task's output with MATCHER_PATTERNS. */
export function matchProblems(output: string): Problem[] {
  const lines = output.split(/\r?\n/);
  const [head, where] = MATCHER_PATTERNS.map((p) => new RegExp(p.regexp));
  const out: Problem[] = [];
  for (let i = 0; i + 1 < lines.length; i++) {
    const h = head.exec(lines[i]);
    if (!h) continue;
    const w = where.exec(lines[i + 1]);
    if (!w) continue;
    out.push({
      severity: h[1],
      code: h[2],
      message: h[3],
      file: w[1],
      line: Number(w[2]),
      column: Number(w[3]),
    });
  }
  return out;
}

/** Whether a path exists (injected: tests give their own). */
export type Exists = (p: string) => boolean;

/** The folders a quick start's virtual environment may be in: `.venv`, then `.venv-*`. */
export function venvCandidates(folder: string, names: readonly string[]): string[] {
  const extra = names.filter((n) => /^\.venv-[A-Za-z0-9_.-]+$/.test(n)).sort();
  return ['.venv', ...extra].map((n) => path.join(folder, n));
}

/**
 * The server's command when the settings leave the default (`["alpha-lsp"]`): the
 * `bin/alpha-lsp` of the first workspace folder's `.venv`, else of its `.venv-*` (the README's
 * commands make `.venv-test`, `.venv-bench`), else `alpha-lsp` from PATH.
 */
export function defaultServer(
  folders: readonly { path: string; entries: readonly string[] }[],
  exists: Exists
): string {
  for (const f of folders) {
    for (const venv of venvCandidates(f.path, f.entries)) {
      const exe = path.join(venv, 'bin', 'alpha-lsp');
      if (exists(exe)) return exe;
    }
  }
  return 'alpha-lsp';
}

/**
 * The `alpha` CLI that goes with a server command: the `alpha` beside `…/bin/alpha-lsp`,
 * `python -m alpha_cli.main` for `python -m alpha_lsp`, else `alpha` from PATH.
 */
export function cliFor(
  server: { command: string; args: readonly string[] },
  exists: Exists
): { command: string; args: string[] } {
  if (server.args[0] === '-m' && server.args[1] === 'alpha_lsp') {
    return { command: server.command, args: ['-m', 'alpha_cli.main'] };
  }
  if (path.basename(server.command) === 'alpha-lsp') {
    const sibling = path.join(path.dirname(server.command), 'alpha');
    if (path.dirname(server.command) !== '.' && exists(sibling)) return { command: sibling, args: [] };
  }
  return { command: 'alpha', args: [] };
}

/** `alpha-tui` beside the CLI (for "Open alpha-tui"). */
export function tuiFor(cli: { command: string; args: readonly string[] }, exists: Exists): string {
  if (path.basename(cli.command) === 'alpha') {
    const sibling = path.join(path.dirname(cli.command), 'alpha-tui');
    if (exists(sibling)) return sibling;
  }
  if (cli.args[0] === '-m') {
    const sibling = path.join(path.dirname(cli.command), 'alpha-tui');
    if (exists(sibling)) return sibling;
  }
  return 'alpha-tui';
}

/** The refusal name a diagnostic carries (its `code`), when it is one of ours. */
export function refusalName(code: unknown): string | undefined {
  const value =
    typeof code === 'object' && code !== null && 'value' in code
      ? (code as { value: unknown }).value
      : code;
  return typeof value === 'string' && /^[a-z0-9][a-z0-9-]*$/.test(value) ? value : undefined;
}
