import type { OptimiseResult } from '../../api/optimise-result';
import type { Repetition, SayPhase, WizardSession } from '../targets/target-runner';
import { WizardCancelled } from '../targets/wizard-cancelled';
import { WizardLoop } from './wizard-loop';

/**
 * The optimisation wizard's steps, once for every target: the target made ready, the baseline (measured again
 * when the target asks), what the knobs learn from it, the coordinate ascent, the final comparison against the
 * baseline, and the result; a stop on the way ends the run as the target records it.
 */
export async function driveWizard<C, R extends Repetition>(session: WizardSession<C, R>): Promise<OptimiseResult> {
  const loop = new WizardLoop(session.target, session.rules, {
    cancelled: () => session.cancelled(),
    progress: (p) => session.progress(p),
    afterTrial: (trial) => session.afterTrial(trial),
  });
  const say: SayPhase = (phase, label = null) => loop.progress(phase, null, 0, 0, label, null, session.finalDone());
  try {
    await session.prepare(say);
    if (!session.baseline()) {
      const measures = { noise: (reps: readonly R[]) => loop.baselineNoise(reps), perJoule: (reps: readonly R[]) => WizardLoop.perJoule(reps) };
      while (await session.takeBaseline(await loop.baseline(session.start()), measures));
    }
    loop.current = session.state;
    await session.afterBaseline(say);
    const baseline = session.baseline()!;
    await loop.search(session.state, baseline.noiseFloor);
    const final = session.finalDone() ? null : await loop.final(baseline.config, session.state, baseline);
    // A cancel during the final comparison's last launch stopped nothing: honoured (resumable), none taken after.
    if (session.closeToCancel()) throw new WizardCancelled('cancelled after the final comparison, before the result was recorded');
    return await session.finish(final, say);
  } catch (err) {
    throw await session.fail(err);
  }
}
