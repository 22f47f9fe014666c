/**
 * Entry point of the engine-host child process: the only process that loads
 * the native addon. A native crash ends this process, never the app.
 */
import { ApiError } from '../api/errors';
import { findAddon } from './addon-path';
import { toApiErrorPayload } from './engine-error';
import type { HostPredictParams, HostRequest, HostSource, HostToSupervisor, HostTrainParams, HostTrainSetup } from './host-protocol';
import { HOST_DEBUG_ENV } from './host-protocol';
import type { NativeAddon, NativeTrainer } from './native-addon';
import { packageRoot } from './package-root';
import { trackProcessMemory } from './process-memory';

interface ParentPort {
  on(event: 'message', listener: (message: { data: unknown }) => void): void;
  postMessage(message: unknown): void;
}

/** Electron's utilityProcess gives `process.parentPort`; child_process.fork gives `process.send`. */
function channel(): { send(msg: HostToSupervisor): void; onMessage(cb: (msg: unknown) => void): void } {
  const parentPort = (process as unknown as { parentPort?: ParentPort }).parentPort;
  if (parentPort) {
    return {
      send: (msg) => parentPort.postMessage(msg),
      onMessage: (cb) => parentPort.on('message', (e) => cb(e.data)),
    };
  }
  if (!process.send) throw new Error('engine-host must be started by the engine supervisor');
  // (Electron ends its utility processes itself.)
  process.once('disconnect', orphaned);
  return {
    // A send fails (EPIPE) when the supervisor died before the end of its channel reached us. Left to Node, that
    // error is uncaught, and the exit it starts waits for the run in progress to finish all its epochs.
    send: (msg) => {
      if (process.connected) process.send?.(msg, undefined, undefined, (err: Error | null) => err && orphaned());
    },
    onMessage: (cb) => process.on('message', cb),
  };
}

/**
 * Raises every run's stop flag. Any exit first joins the libuv threads, so a native run left going would keep
 * this process alive until its last epoch; with the flag up it stops within one micro-batch.
 */
function cancelAll(): void {
  for (const trainer of running.values()) trainer.cancel();
}

/** The supervisor's process is gone (killed, say): nobody can take a result, so stop instead of training on. */
function orphaned(): void {
  cancelAll();
  process.exit(0);
}

// Any other uncaught error still ends the host as Node would (its stack on stderr for the supervisor to
// report), only without training on first.
process.on('uncaughtExceptionMonitor', cancelAll);

const startedAt = Date.now();
const debugEnabled = process.env[HOST_DEBUG_ENV] === '1';
/** Trainers of the runs in progress, by run id, so train.cancel can reach them. */
const running = new Map<string, NativeTrainer>();

/**
 * A trainer with its data, and the engine's options as JSON: the model spec,
 * the device name and the data's fit to the model are checked here.
 */
function setUp(addon: NativeAddon, p: HostTrainSetup): { trainer: NativeTrainer; optionsJson: string } {
  const { seed, threads, ...engineOptions } = p.options;
  // 'auto': the first GPU when the engine sees one, else the CPU.
  if (engineOptions.device === 'auto') engineOptions.device = addon.devices().cuda.available ? 'cuda:0' : 'cpu';
  addon.resolveDevice(engineOptions.device); // throws E_BAD_INPUT with the reason before any data is opened
  const trainer = new addon.Trainer(JSON.stringify(p.spec), JSON.stringify({ seed, threads }));
  try {
    const normalize = JSON.stringify(p.data.normalize ?? {});
    trainer.setSource('train', JSON.stringify(p.data.trainSource ?? { kind: 'cache', dir: p.data.train.dir }), normalize);
    if (p.data.test) trainer.setSource('test', JSON.stringify({ kind: 'cache', dir: p.data.test.dir }), normalize);
  } catch (err) {
    trainer.release();
    throw err;
  }
  return { trainer, optionsJson: JSON.stringify(engineOptions) };
}

/** Refuses a request exactly as train.run would before its first step, without training (the trainer is dropped). */
async function check(addon: NativeAddon, p: HostTrainSetup): Promise<Record<string, never>> {
  const { trainer, optionsJson } = setUp(addon, p);
  try {
    await trainer.check(optionsJson);
    return {};
  } finally {
    trainer.release();
  }
}

/** The predicted memory breakdown at each batch size, from one trainer set up as train.run would be (nothing trains). */
function predictMemory(addon: NativeAddon, p: HostPredictParams): unknown[] {
  const { trainer, optionsJson } = setUp(addon, p);
  const options = JSON.parse(optionsJson) as Record<string, unknown>;
  try {
    return p.batchSizes.map((batchSize) => trainer.predictMemory(JSON.stringify({ ...options, batchSize })));
  } finally {
    trainer.release();
  }
}

async function train(addon: NativeAddon, p: HostTrainParams, emit: (event: unknown) => void): Promise<unknown> {
  // One trainer per id: a second run under a live id (a client's job id chosen to equal a benchmark's
  // repetition, say) would take the first one's entry, and its cancel would stop the wrong run.
  if (running.has(p.runId)) throw new ApiError('E_BAD_INPUT', `the engine is already training a run with id ${p.runId}: pick another id`);
  const processMemory = trackProcessMemory();
  const { trainer, optionsJson } = setUp(addon, p);
  running.set(p.runId, trainer);
  try {
    const result = (await trainer.train(optionsJson, emit)) as Record<string, unknown>;
    if (p.checkpointPath) trainer.save(p.checkpointPath);
    const info = trainer.info();
    return { ...result, model: { family: info.family, params: info.params, flopsPerSample: info.flopsPerSample }, processMemory: processMemory() };
  } finally {
    running.delete(p.runId);
    // Freed now: a host that trains one trainer per repetition must not wait for the garbage collector.
    trainer.release();
  }
}

async function handle(addon: NativeAddon, req: HostRequest, emit: (event: unknown) => void): Promise<unknown> {
  switch (req.method) {
    case 'version':
      return { ...addon.version(), hostPid: process.pid };
    case 'devices':
      return addon.devices();
    case 'resolveDevice':
      return addon.resolveDevice(String((req.params as { name?: unknown } | null)?.name ?? ''));
    case 'ping':
      return { hostPid: process.pid, hostUptimeMs: Date.now() - startedAt };
    case 'modelInfo':
      return addon.modelInfo(JSON.stringify((req.params as { spec: unknown }).spec));
    case 'train.check':
      return check(addon, req.params as HostTrainSetup);
    case 'train.predictMemory':
      return predictMemory(addon, req.params as HostPredictParams);
    case 'engine.memory':
      return addon.engineMemory();
    case 'train.run':
      return train(addon, req.params as HostTrainParams, emit);
    case 'train.cancel': {
      const trainer = running.get(String((req.params as { runId?: unknown }).runId));
      return { cancelled: trainer ? trainer.cancel() : false };
    }
    case 'loader.bench': {
      const q = req.params as { source: HostSource; options: object; maxBatches: number; maxSeconds: number };
      return addon.benchLoader(JSON.stringify(q.source), JSON.stringify(q.options), q.maxBatches, q.maxSeconds);
    }
    case 'loader.sequentialRead':
      return addon.sequentialRead((req.params as { files: string[] }).files);
    case 'bench.gemm': {
      const g = req.params as { m: number; n: number; k: number; reps: number; threads: number };
      return addon.benchGemm(g.m, g.n, g.k, g.reps, g.threads);
    }
    case 'bench.gemmCuda': {
      const g = req.params as { m: number; n: number; k: number; precision: 'fp32' | 'bf16' | 'fp16'; reps: number };
      return addon.benchGemmCuda(g.m, g.n, g.k, g.precision, g.reps);
    }
    case 'bench.h2dCopy': {
      const c = req.params as { device: number; bytes: number; reps: number };
      return addon.benchH2dCopy(c.device, c.bytes, c.reps);
    }
    case 'debug.abort':
      if (!debugEnabled || !addon.debugAbort) {
        throw new ApiError('E_BAD_INPUT', 'debug.abort is only available in engine hosts started in debug mode');
      }
      return addon.debugAbort();
  }
}

function main(): void {
  const port = channel();
  let addon: NativeAddon;
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- a .node file can only be loaded by require
    addon = require(findAddon(packageRoot())) as NativeAddon;
  } catch (err) {
    port.send({ kind: 'ready', pid: process.pid, error: (err as Error).message });
    return;
  }
  port.onMessage((raw) => {
    const req = raw as HostRequest;
    if (!req || req.kind !== 'request') return;
    const emit = (data: unknown) => port.send({ kind: 'event', id: req.id, data });
    handle(addon, req, emit).then(
      (result) => port.send({ kind: 'reply', id: req.id, ok: true, result }),
      (err: unknown) => port.send({ kind: 'reply', id: req.id, ok: false, error: toApiErrorPayload(err) }),
    );
  });
  port.send({ kind: 'ready', pid: process.pid });
}

main();
