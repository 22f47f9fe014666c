// `check --against <report>` takes the report's path as a shell gives it: from the current folder, or absolute, as
// well as its path in the workspace (re-attack of issue 41: a relative path typed elsewhere was "not there").
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { againstInWorkspace } from '../../src-main/cli/check-command';
import { tempDir } from '../helpers/temp-dir';

const root = tempDir();
afterAll(() => root.cleanup());
const ws = path.join(root.dir, 'ws');
const elsewhere = path.join(root.dir, 'elsewhere');
mkdirSync(path.join(ws, 'reports', '0001-x'), { recursive: true });
mkdirSync(path.join(ws, 'runs', '20261207-010203-abcdef'), { recursive: true });
mkdirSync(elsewhere, { recursive: true });
writeFileSync(path.join(ws, 'reports', '0001-x', '0001-x.md'), '# x\n');
writeFileSync(path.join(elsewhere, 'mine.md'), '# outside\n');

describe('check --against, a report path', () => {
  it('reads a path from the current folder, or an absolute one, as its path in the workspace', () => {
    expect(againstInWorkspace('0001-x/0001-x.md', ws, path.join(ws, 'reports'))).toBe('reports/0001-x/0001-x.md');
    expect(againstInWorkspace('../ws/reports/0001-x/0001-x.md', ws, elsewhere)).toBe('reports/0001-x/0001-x.md');
    expect(againstInWorkspace(path.join(ws, 'reports', '0001-x', '0001-x.md'), ws, elsewhere)).toBe('reports/0001-x/0001-x.md');
  });

  it('keeps a run id, a path meant in the workspace, a folder and a file outside it as typed', () => {
    // In runs/, the id names the run folder there: it stays an id, not "runs/<id>".
    expect(againstInWorkspace('20261207-010203-abcdef', ws, path.join(ws, 'runs'))).toBe('20261207-010203-abcdef');
    expect(againstInWorkspace('reports/0001-x/0001-x.md', ws, elsewhere)).toBe('reports/0001-x/0001-x.md');
    // Outside the workspace: left for the service to refuse, naming it.
    expect(againstInWorkspace('mine.md', ws, elsewhere)).toBe('mine.md');
    expect(againstInWorkspace(path.join(elsewhere, 'mine.md'), ws, root.dir)).toBe(path.join(elsewhere, 'mine.md'));
  });
});
