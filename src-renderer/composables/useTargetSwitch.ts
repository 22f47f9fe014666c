import type { TargetKind } from '@api/jobs';
import type { Ref, WatchSource } from 'vue';
import { watch } from 'vue';

/**
 * Keeps a form's target switch on the job that runs: when either side starts (here, re-attached after a
 * reload, or from another window) the switch moves to it, so its live view shows; `ended` is called with
 * the side whose job ended (to read a list again).
 */
export function followRunningTarget(
  target: Ref<TargetKind>,
  running: Record<TargetKind, WatchSource<boolean>>,
  ended: (kind: TargetKind) => void = () => undefined,
): void {
  for (const kind of ['engine', 'script'] as const) {
    watch(running[kind], (now, was) => {
      if (now) target.value = kind;
      else if (was) ended(kind);
    });
  }
}
