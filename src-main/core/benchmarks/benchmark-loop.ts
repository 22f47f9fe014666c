import type { BenchmarkProgress } from '../../api/benchmark';
import { ApiError } from '../../api/errors';
import type { RunRecordJson } from '../../api/run-record';
import type { RunRecord } from '../run-store';

/** Progress as a benchmark's loop reports it; the service adds its job id and totals. */
export type RepetitionProgress = Omit<BenchmarkProgress, 'jobId' | 'target' | 'repetitions' | 'totalSteps' | 'warmupSteps' | 'steps'>;

/** What the one training benchmark needs of a target: a fresh repetition, what it records, the summary. */
export interface BenchmarkTarget<R, T extends RunRecordJson['result']> {
  /** "benchmark", "script benchmark": how messages name it. */
  what: string;
  /** "repetition", "launch": what a person calls one of its repetitions. */
  unit: string;
  /** One fresh repetition (a new engine trainer, a new launch of the command), recorded into the run. */
  repetition(i: number, run: RunRecord): Promise<R>;
  /** The repetition as the run's events.jsonl records it, and its samples/s for the progress. */
  recorded(rep: R): { event: Record<string, unknown>; samplesPerSec: number };
  summarize(run: RunRecord, reps: R[]): Promise<T> | T;
}

/**
 * The training benchmark, either target (issue 25): `repeat` fresh repetitions, each recorded and
 * reported as it ends, a cancel checked before each, then one summary saved as the run's result; the
 * run ends failed or cancelled with the error otherwise.
 */
export async function benchmarkRepetitions<R, T extends RunRecordJson['result']>(
  target: BenchmarkTarget<R, T>,
  run: RunRecord,
  o: { repeat: number; totalSteps: number; cancelled: () => boolean; progress: (p: RepetitionProgress) => void },
): Promise<T> {
  try {
    const reps: R[] = [];
    for (let i = 1; i <= o.repeat; i++) {
      if (o.cancelled()) throw new ApiError('E_CANCELLED', `the ${target.what} was cancelled before ${target.unit} ${i} of ${o.repeat}`);
      const rep = await target.repetition(i, run);
      reps.push(rep);
      const { event, samplesPerSec } = target.recorded(rep);
      run.appendEvent({ type: 'repetition', ...event });
      o.progress({ runId: run.id, phase: 'repetition-done', repetition: i, step: o.totalSteps, samplesPerSec });
    }
    const result = await target.summarize(run, reps);
    await run.finish('completed', { result });
    return result;
  } catch (err) {
    throw await run.fail(err);
  }
}
