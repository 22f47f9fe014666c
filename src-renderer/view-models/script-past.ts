import type { ScriptOptimiseRecord, ScriptTarget } from '@api/script-target';
import { ScriptOptimiseRecordSchema, ScriptOptimiseRequestSchema } from '@api/script-target';
import type { RunDetail } from '@api/training';

import { quoteArgv } from '../stores/script-form';

/** What run.json of a script optimisation holds (the wizard writes it; see optimiseScript). */
export interface ScriptOptimiseRun {
  runId: string;
  status: 'running' | 'completed' | 'cancelled' | 'failed' | 'interrupted';
  title: string;
  target: ScriptTarget;
  preset: ScriptOptimiseRecord['preset'];
  maxTrials: number;
  /** The job that runs it, so a window that did not start it can still follow and cancel it. */
  jobId: string | null;
  /** Completed: the result; cancelled or failed: what it had measured; running: null. */
  record: ScriptOptimiseRecord | null;
  /** Why it stopped early, as the run recorded it. */
  message: string | null;
  updatedAt: string;
}

/**
 * A run of kind optimise read as a script optimisation, or null when its target is not a script
 * (an engine wizard, listed from its saved state instead) or its config is not one this window reads.
 */
export function scriptOptimiseRun(detail: RunDetail): ScriptOptimiseRun | null {
  const config = (detail.record as { config?: { target?: { kind?: unknown }; request?: unknown; jobId?: unknown } } | null)?.config;
  if (detail.summary.kind !== 'optimise' || config?.target?.kind !== 'script') return null;
  const request = ScriptOptimiseRequestSchema.safeParse(config.request);
  if (!request.success) return null;
  const parsed = ScriptOptimiseRecordSchema.safeParse((detail.record as { result?: unknown }).result);
  const s = detail.summary;
  return {
    runId: s.id,
    status: s.status === 'unreadable' ? 'failed' : s.status,
    title: quoteArgv(request.data.target.command),
    target: request.data.target,
    preset: request.data.preset,
    maxTrials: request.data.maxTrials,
    jobId: typeof config.jobId === 'string' ? config.jobId : null,
    record: parsed.success ? parsed.data : null,
    message: s.error,
    updatedAt: s.finishedAt ?? s.createdAt,
  };
}
