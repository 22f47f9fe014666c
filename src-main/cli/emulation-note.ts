import { describeComputeDevice, emulationWarning } from '../core/common/compute-device';
import type { Services } from '../core/services';

/**
 * Says, before any number appears, that `device` is the emulated CUDA device (its timings are the
 * processor's); returns the line so a command can repeat it beside its results, or null.
 */
export async function warnIfEmulated(services: Pick<Services, 'engine'>, device: string): Promise<string | null> {
  // A device listing that fails says nothing here: the run itself then reports the engine's error.
  const devices = await services.engine.devices().catch(() => null);
  const warning = devices ? emulationWarning(describeComputeDevice(devices, device)) : null;
  if (warning) process.stderr.write(`warning: ${warning}\n`);
  return warning;
}
