import { ApiError } from '../../api/errors';
import type { BenchmarkPlan, RepetitionProgress } from '../targets/target-runner';
import type { RunRecord } from '../workspace/run-store';

/**
 * The training benchmark, either target (issue 25): `repeat` fresh repetitions, each recorded and
 * reported as it ends, a cancel checked before each and after the last, then one summary saved as the run's result; the
 * run ends failed or cancelled with the error otherwise.
 */
export async function benchmarkRepetitions<R>(
  plan: BenchmarkPlan<R>,
  run: RunRecord,
  o: {
    repeat: number;
    totalSteps: number;
    cancelled: () => boolean;
    /** The last cancellation point (closedToCancel): true when a cancel came; none is taken after it. */
    closeToCancel: () => boolean;
    progress: (p: RepetitionProgress) => void;
  },
): Promise<Awaited<ReturnType<BenchmarkPlan<R>['summarize']>>> {
  try {
    const reps: R[] = [];
    for (let i = 1; i <= o.repeat; i++) {
      if (o.cancelled()) throw new ApiError('E_CANCELLED', `the ${plan.what} was cancelled before ${plan.unit} ${i} of ${o.repeat}`);
      const rep = await plan.repetition(i, run, o.progress);
      reps.push(rep);
      const { event, samplesPerSec } = plan.recorded(rep);
      run.appendEvent({ type: 'repetition', ...event });
      o.progress({ runId: run.id, phase: 'repetition-done', repetition: i, step: o.totalSteps, samplesPerSec });
    }
    // A cancel answered as taken during the last repetition is honoured: the run is not then recorded completed.
    if (o.cancelled()) throw new ApiError('E_CANCELLED', `the ${plan.what} was cancelled after its last ${plan.unit}, before its summary`);
    const result = await plan.summarize(run, reps);
    if (o.closeToCancel()) throw new ApiError('E_CANCELLED', `the ${plan.what} was cancelled after its last ${plan.unit}, before its summary`);
    await run.finish('completed', { result });
    return result;
  } catch (err) {
    throw await run.fail(err);
  }
}
