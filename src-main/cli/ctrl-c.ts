import type { Services } from '../core/services';

/**
 * Ctrl-C cancels the command's job as the app's Cancel does (jobs.cancel: a script's process group is killed and
 * the run recorded cancelled, a wizard keeps its finished trials); before the job has an id there is nothing to
 * cancel, so it quits. With `quitOnSecond` a second Ctrl-C quits at once (only where no process of the user's own
 * would be left running: a script's group is in its own session, so its job must stop it). `off` when it ended.
 */
export function ctrlCCancels(
  services: Pick<Services, 'cancelJob'>,
  what: string,
  options: { jobId?: string; quitOnSecond?: boolean } = {},
): { jobIs(id: string): void; off(): void } {
  let id = options.jobId ?? null;
  let asked = false;
  const onSigint = () => {
    if (id === null || (asked && options.quitOnSecond)) process.exit(130);
    process.stderr.write(`\ncancelling the ${what}...${options.quitOnSecond ? ' (Ctrl-C again to quit at once)' : ''}\n`);
    asked = true;
    void services.cancelJob(id);
  };
  process.on('SIGINT', onSigint);
  return {
    jobIs: (started) => {
      id = started;
    },
    off: () => process.off('SIGINT', onSigint),
  };
}
