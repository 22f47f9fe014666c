import type { Devices } from '../../api/devices';
import type { RunComputeDevice } from '../../api/run-record';

/** What "emulated" means, wherever a run, result or report says it. */
export const EMULATED_NOTE = 'emulated (CPU): the CUDA code ran on the processor to check it, so its timings are not GPU figures';

/** The device a run computes on ('auto' resolved as the engine resolves it), for its record. */
export function describeComputeDevice(devices: Devices, device: string): RunComputeDevice {
  const id = device === 'auto' ? (devices.cuda.available ? 'cuda:0' : 'cpu') : device;
  const cuda = /^cuda:(\d+)$/.exec(id);
  if (!cuda) return { id, name: devices.cpu.name };
  const gpu = devices.cuda.devices.find((d) => d.index === Number(cuda[1]));
  return { id, name: gpu?.name ?? 'not present', ...(devices.cuda.emulated ? { emulated: true } : {}) };
}

/** A line for people, or null when the device is a real one. */
export function emulationWarning(device: RunComputeDevice): string | null {
  return device.emulated ? `${device.id} is the emulated CUDA device, ${EMULATED_NOTE}.` : null;
}
