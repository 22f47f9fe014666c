import { z } from 'zod';

export const CpuInfoSchema = z.object({
  name: z.string(),
  arch: z.string(),
  logicalCores: z.number().int().nonnegative(),
  /** Vector extensions the CPU backend can use, e.g. ["avx2", "fma"]. */
  simd: z.array(z.string()),
});

export const CudaDeviceSchema = z.object({
  index: z.number().int().nonnegative(),
  name: z.string(),
  totalMemoryBytes: z.number().nonnegative(),
  /** "major.minor", e.g. "9.0" for Hopper. */
  computeCapability: z.string(),
  multiprocessors: z.number().int().nonnegative(),
  pciBusId: z.string(),
});

export const CudaStatusSchema = z.object({
  /** The CUDA backend is compiled into this engine build. */
  compiled: z.boolean(),
  /**
   * The build is the emulated device (TB_CUDA_EMULATE): CUDA code run on the CPU to check it.
   * Its devices' names say "emulated (CPU)", and no timing from it is a GPU figure.
   */
  emulated: z.boolean().optional(),
  /** A driver answered and at least one device exists. */
  available: z.boolean(),
  /** Why CUDA is not available, in words a person can act on; null when it is. */
  reason: z.string().nullable(),
  /** Driver's CUDA version times 1000 (13000 is 13.0); 0 without a driver. */
  driverVersion: z.number().int().nonnegative(),
  runtimeVersion: z.number().int().nonnegative(),
  devices: z.array(CudaDeviceSchema),
});

export const DevicesSchema = z.object({
  cpu: CpuInfoSchema,
  cuda: CudaStatusSchema,
});
export type Devices = z.infer<typeof DevicesSchema>;

export const EngineVersionSchema = z.object({
  /** Engine (addon) version. */
  version: z.string(),
  napiVersion: z.number().int(),
  cudaCompiled: z.boolean(),
  debugEntryPoints: z.boolean(),
  /** Process id of the engine host that answered. */
  hostPid: z.number().int(),
});
export type EngineVersion = z.infer<typeof EngineVersionSchema>;

export const PingResultSchema = z.object({
  hostPid: z.number().int(),
  hostUptimeMs: z.number().nonnegative(),
});
export type PingResult = z.infer<typeof PingResultSchema>;
