// The status bar item for the server, as rust-analyzer has: starting, running (with the command
// it runs) or stopped; a click shows the server's output (or restarts it when it stopped).

import * as vscode from 'vscode';

export type ServerState = 'starting' | 'running' | 'stopped';

export class ServerStatus implements vscode.Disposable {
  readonly item: vscode.StatusBarItem;

  constructor() {
    this.item = vscode.window.createStatusBarItem('alpha.server', vscode.StatusBarAlignment.Left, 0);
    this.item.name = 'Alpha Language Server';
    this.set('starting', '');
    this.item.show();
  }

  set(state: ServerState, command: string, why?: string): void {
    const icons = { starting: '$(loading~spin)', running: '$(check)', stopped: '$(error)' };
    this.item.text = `${icons[state]} Alpha`;
    const lines = [`alpha-lsp: ${state}${why ? ` (${why})` : ''}`];
    if (command) lines.push(command);
    lines.push(state === 'stopped' ? 'Click to restart it' : 'Click to show its output');
    this.item.tooltip = lines.join('\n');
    this.item.command = state === 'stopped' ? 'alpha.restartServer' : 'alpha.showServerOutput';
    this.item.backgroundColor =
      state === 'stopped' ? new vscode.ThemeColor('statusBarItem.errorBackground') : undefined;
  }

  dispose(): void {
    this.item.dispose();
  }
}
