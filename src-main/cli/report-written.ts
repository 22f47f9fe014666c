import path from 'node:path';

import type { ReportDetail } from '../api/reports';
import { DEFAULT_PORT } from '../server/serve';

/**
 * Where a command's --report went and how to open it, on stderr so --json output stays one
 * document: `optimise --report` says it the same way for an engine wizard and for a script's.
 */
export function reportWrittenLines(workspaceRoot: string, report: ReportDetail): string {
  return [
    `report     ${path.join(workspaceRoot, report.summary.path)} (ADR ${report.summary.number}, ${report.figures.length} figures beside it)`,
    ...report.notes.map((note) => `           note: ${note}`),
    `           open it in the workbench: trainbench serve (then http://127.0.0.1:${DEFAULT_PORT}, area Reports), or the desktop app`,
  ].join('\n');
}
