import { accessSync, constants, statSync } from 'node:fs';
import path from 'node:path';

/** Where nvidia-smi was found, or every place looked when it was not. */
export interface NvidiaSmiLookup {
  /** The executable to run; null when no candidate holds one. */
  command: string | null;
  /** One candidate per PATH folder, in PATH order (searched first). */
  onPath: string[];
  /** The driver's own install places (Windows), searched after PATH. */
  driverPlaces: string[];
}

/** Environment variable names are case-insensitive on Windows (`Path`, `SYSTEMROOT`, …). */
function envValue(env: NodeJS.ProcessEnv, name: string, platform: NodeJS.Platform): string | undefined {
  if (platform !== 'win32') return env[name] || undefined;
  const key = Object.keys(env).find((k) => k.toUpperCase() === name.toUpperCase() && env[k]);
  return key === undefined ? undefined : env[key];
}

function isExecutableFile(file: string): boolean {
  try {
    if (!statSync(file).isFile()) return false;
    accessSync(file, constants.X_OK); // on Windows X_OK is an existence check
    return true;
  } catch {
    return false;
  }
}

/**
 * Finds nvidia-smi: PATH first; on Windows then `%SystemRoot%\System32` (where
 * DCH drivers install it) and `%ProgramFiles%\NVIDIA Corporation\NVSMI` (older
 * drivers), neither of which is always on PATH. The environment and platform
 * are parameters so the Windows lookup is testable anywhere.
 */
export function findNvidiaSmi(env: NodeJS.ProcessEnv = process.env, platform: NodeJS.Platform = process.platform): NvidiaSmiLookup {
  const windows = platform === 'win32';
  const exe = windows ? 'nvidia-smi.exe' : 'nvidia-smi';
  const pathDirs = (envValue(env, 'PATH', platform) ?? '')
    .split(windows ? ';' : ':')
    .map((d) => (windows ? d.trim().replace(/^"(.*)"$/, '$1') : d)) // Windows PATH entries may be quoted
    .filter(Boolean);
  const onPath = pathDirs.map((d) => path.join(d, exe));
  const driverPlaces: string[] = [];
  if (windows) {
    const systemRoot = envValue(env, 'SystemRoot', platform) ?? envValue(env, 'windir', platform) ?? 'C:\\Windows';
    const programFiles = envValue(env, 'ProgramW6432', platform) ?? envValue(env, 'ProgramFiles', platform) ?? 'C:\\Program Files';
    driverPlaces.push(path.join(systemRoot, 'System32', exe), path.join(programFiles, 'NVIDIA Corporation', 'NVSMI', exe));
  }
  return { command: [...onPath, ...driverPlaces].find(isExecutableFile) ?? null, onPath, driverPlaces };
}

/** The "not found" sentence: PATH by its size (it can be long), the driver's places by name. */
export function notFoundMessage(lookup: NvidiaSmiLookup): string {
  const n = lookup.onPath.length;
  const where = [`not in any of the ${n} folder${n === 1 ? '' : 's'} on PATH`, ...lookup.driverPlaces].join(', nor at ');
  return `no NVIDIA GPU found: nvidia-smi is ${where} (set TRAINBENCH_NVIDIA_SMI to its path if it is elsewhere)`;
}
