import type { Devices } from '../api/devices';

/**
 * The whole native module as C++ exports it (native/src/addon/addon.cpp).
 * This is the contract with C++: change both together.
 */
export interface NativeAddon {
  version(): { version: string; napiVersion: number; cudaCompiled: boolean; debugEntryPoints: boolean };
  devices(): Devices;
  /** Throws E_BAD_INPUT when the name is not "cpu", "cuda" or "cuda:N", or the device is missing. */
  resolveDevice(name: string): { kind: 'cpu' | 'cuda'; index: number };
  /** Present only in builds with TB_DEBUG_ENTRYPOINTS: aborts the process. */
  debugAbort?: () => never;
}

/** Shape of errors thrown by the addon. */
export interface NativeError extends Error {
  code?: string;
  where?: string;
}
