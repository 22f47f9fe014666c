import path from 'node:path';

import { formatIssues } from '../../api/format-issues';
import type { RunAnnotateParams, RunAnnotation, RunNotesFile } from '../../api/run-notes';
import { RUN_NOTES_MAX_BYTES, RUN_NOTES_SCHEMA_VERSION, RunNotesFileSchema } from '../../api/run-notes';
import type { Workspace } from './workspace';
import { requireRun } from './run-file';
import { isMissing, readJsonCapped, writeJsonConfined } from './workspace-files';

const notesFile = (id: string) => path.join('runs', id, 'notes.json');

/**
 * A run's notes.json through its schema and caps: the annotation, nothing when the
 * run has none, or the problem in words (damaged, too large, a link), never fatal.
 */
export async function readRunAnnotation(workspace: Workspace, id: string): Promise<{ annotation?: RunAnnotation; problem?: string }> {
  let raw: unknown;
  try {
    raw = await readJsonCapped(workspace, notesFile(id), RUN_NOTES_MAX_BYTES);
  } catch (err) {
    return isMissing(err) ? {} : { problem: (err as Error).message };
  }
  const parsed = RunNotesFileSchema.safeParse(raw);
  if (!parsed.success) return { problem: `runs/${id}/notes.json does not match its schema: ${formatIssues(parsed.error, 'notes')}` };
  const { schemaVersion: _version, ...annotation } = parsed.data;
  return { annotation };
}

/**
 * runs.annotate: stores a run's name, tags and notes in runs/<id>/notes.json (run.json is
 * never rewritten: it is the run's own record). Fields left out keep their stored value;
 * a damaged notes.json is replaced. Calls for one run are applied one after another, so
 * two windows editing at once never lose a field to a read-modify-write race.
 */
export class RunAnnotator {
  private readonly chains = new Map<string, Promise<unknown>>();

  constructor(private readonly workspace: Workspace) {}

  annotate(params: RunAnnotateParams): Promise<RunAnnotation> {
    const previous = this.chains.get(params.id) ?? Promise.resolve();
    const next = previous.catch(() => undefined).then(() => this.write(params));
    this.chains.set(params.id, next);
    void next.finally(() => {
      if (this.chains.get(params.id) === next) this.chains.delete(params.id);
    }).catch(() => undefined);
    return next;
  }

  private async write({ id, ...fields }: RunAnnotateParams): Promise<RunAnnotation> {
    // The router checked the id already; checked again here, as every id is before it becomes a path. A run that
    // cannot be read gets no notes: they would sit in a folder nothing lists as that run.
    await requireRun(this.workspace, id);
    const stored = (await readRunAnnotation(this.workspace, id)).annotation;
    const file: RunNotesFile = {
      schemaVersion: RUN_NOTES_SCHEMA_VERSION,
      name: fields.name ?? stored?.name ?? '',
      tags: fields.tags ?? stored?.tags ?? [],
      notes: fields.notes ?? stored?.notes ?? '',
      updatedAt: new Date().toISOString(),
    };
    // Checked again as written: the file this makes always reads back.
    const checked = RunNotesFileSchema.parse(file);
    await writeJsonConfined(this.workspace, notesFile(id), checked);
    const { schemaVersion: _version, ...annotation } = checked;
    return annotation;
  }
}
