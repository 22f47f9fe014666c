import { Command } from 'commander';

import { ApiError } from '../api/errors';
import { formatIssues } from '../api/format-issues';
import type { ConfounderPolicy, OptimiseProgress, WizardObjective, OptimiseResult, OptimiseTrial } from '../api/optimise';
import { conditionsSummary } from '../api/confounders';
import { ConfounderPolicySchema, WizardObjectiveSchema, OptimisePresetSchema, OptimiseRequestSchema, ReadFromSchema } from '../api/optimise';
import { trialCiLevel } from '../api/charts/optimise-charts';
import { newRunId } from '../core/run-store';
import { createServices } from '../core/services';
import { eitherTarget } from './either-target';
import { warnIfEmulated } from './emulation-note';
import { optimiseScriptAction, optimiseScriptCommand, resumeScriptOptimisation } from './optimise-script-command';
import { defaultWorkspaceDir } from '../core/workspace';
import { reportWrittenLines } from './report-written';
import { choiceArg, intArg, measuredTarget, type MeasuredTargetFlags, measuredTargetOptions, parseBytes, ratioArg, secondsRangeArg } from './train-inputs';

interface OptimiseFlags extends MeasuredTargetFlags {
  readFrom: 'cache' | 'source';
  warmupSteps: number;
  steps: number;
  minWindow: number;
  memoryLimit?: number;
  repeat: number;
  preset: 'max-speed' | 'reproducible' | 'balanced';
  maxTrials: number;
  allowRecipeChanges?: boolean;
  lossTolerance?: number;
  confounders: ConfounderPolicy;
  objective: WizardObjective;
  batchSearch: boolean;
  resume?: string;
  report?: boolean;
  json?: boolean;
  progress: boolean;
  workspace: string;
}

function duration(seconds: number | null): string {
  if (seconds === null || !Number.isFinite(seconds) || seconds < 0) return '--:--';
  const s = Math.round(seconds);
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
}

const n0 = (x: number) => Math.round(x).toLocaleString('en-US');
const x3 = (v: number) => `${v.toFixed(3)}x`;

/** One progress line: a bar over the phase's repetitions, and the ETA of the whole wizard. */
export function progressLine(p: OptimiseProgress): string {
  const frac = p.repetitions > 0 ? p.repetition / p.repetitions : 0;
  const width = 20;
  const filled = Math.round(frac * width);
  const bar = `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}]`;
  const eta = `elapsed ${duration(p.elapsedSeconds)}, ETA ${duration(p.etaSeconds)}`;
  if (p.finishedTrial) return `trial ${p.finishedTrial.index}: ${p.finishedTrial.change.label}: ${p.finishedTrial.decision} (${trialSpeedup(p.finishedTrial)}); state saved (${eta})`;
  switch (p.phase) {
    case 'preparing':
      return `optimisation ${p.optimiseId}: preparing the data`;
    case 'baseline':
      return `baseline ${bar} repetition ${p.repetition}/${p.repetitions} (${eta})`;
    case 'limits':
      return 'measuring the physical limits (GEMM rate, read rate)';
    case 'batch-search':
      return 'searching the batch size for the batch-size candidate (a run of kind batch-search)';
    case 'trial':
      return `trial ${p.trial}/${p.maxTrials} max: ${p.label} ${bar} pair ${p.repetition}/${p.repetitions} (${eta})`;
    case 'final':
      return `final vs baseline ${bar} pair ${p.repetition}/${p.repetitions} (${eta})`;
    case 'done':
      return `done in ${duration(p.elapsedSeconds)}`;
  }
}

function trialSpeedup(t: OptimiseTrial): string {
  return t.speedup ? `${x3(t.speedup.median)} [${x3(t.speedup.low)}, ${x3(t.speedup.high)}]` : 'no speedup measured';
}

/** The result as a person reads it: the baseline and diagnosis, the limits, every attempt, then what to use. */

/** The level of the trials' paired intervals, "95%" or what their few pairs cover ("75.0%" for 3). */
function trialLevels(trials: readonly OptimiseTrial[]): string {
  const levels = [...new Set(trials.filter((t) => t.speedup).map(trialCiLevel))];
  return levels.length === 1 ? levels[0] : levels.length ? levels.join(' or ') : '95%';
}

export function formatOptimise(r: OptimiseResult): string {
  const b = r.baseline;
  const ci = (i: { low: number; median: number; high: number }) => `${n0(i.median)} samples/s (95% CI ${n0(i.low)}–${n0(i.high)})`;
  const lim = (name: string, l: { stepMs: number | null; baselineOverFloor: number | null; derivation: string }) =>
    `  ${name.padEnd(8)} ${l.stepMs === null ? 'n/a'.padStart(10) : `${l.stepMs.toFixed(3)} ms`.padStart(10)}  ${l.baselineOverFloor === null ? '' : `baseline ${l.baselineOverFloor.toFixed(1)}x`}  ${l.derivation}`;
  const rows = r.trials.flatMap((t) => {
    const conditions = conditionsSummary(t.conditions ?? []);
    return [
      `${String(t.index).padStart(3)}  ${t.change.label.padEnd(44)} ${t.speedup ? x3(t.speedup.median).padStart(7) : '-'.padStart(7)} ${
        t.speedup ? `[${x3(t.speedup.low)}, ${x3(t.speedup.high)}]`.padEnd(19) : ''.padEnd(19)
      } ${t.decision.padEnd(15)} ${t.why}${t.error ? ` (${t.error})` : ''}`,
      ...(conditions ? [`     conditions: ${conditions}`] : []),
    ];
  });
  const lines = [
    `optimise   ${r.title}  (${r.optimiseId}, preset ${r.preset}, ${r.repeat} repetitions per side, A/B/A/B${r.objective === 'energy' ? '; objective: samples per joule of GPU energy, the speedups below are of samples/J' : ''})`,
    ...(r.stepsWidened ? [`steps      ${r.stepsWidened.from} -> ${r.stepsWidened.to} per repetition: ${r.stepsWidened.from} steps measured ${r.stepsWidened.windowMs.toFixed(1)} ms, under the ${r.stepsWidened.minWindowSeconds} s asked for (--min-window); the baseline was measured again`] : []),
    `baseline   ${ci(b.samplesPerSec)}; step ${b.stepMs.toFixed(3)} ms; noise floor ±${(100 * b.noiseFloor).toFixed(1)}%; ${b.device}`,
    `           phases: ${Object.entries(b.phasesPercent)
      .map(([k, v]) => `${k} ${v.toFixed(1)}%`)
      .join(', ')}`,
    `diagnosis  ${r.diagnosis.summary}`,
    ...r.diagnosis.findings.map((f) => `  ${f.severity === 'warning' ? '!' : '-'} [${f.id}] ${f.text} (${f.measurement.name} = ${f.measurement.value.toFixed(2)} ${f.measurement.unit})`),
    'limits     floor per step, how far the baseline is from it, and how it was measured',
    lim('compute', r.limits.compute),
    lim('read', r.limits.read),
    lim('h2d', r.limits.h2d),
    `  ${r.limits.summary}`,
    `trials     change, speedup over the current best (median, ${trialLevels(r.trials)} CI), decision and why`,
    ...(rows.length ? rows : ['  none: no change to try']),
    ...(r.batchSearch ? [`batch      ${r.batchSearch.recommended !== null ? `the batch-size search recommends ${r.batchSearch.recommended}` : 'no batch-size search'}: ${r.batchSearch.verdict}`] : []),
    ...(r.skipped.length ? ['not tried', ...r.skipped.map((s) => `  - ${s.change.label}: ${s.why}`)] : []),
    `final      ${r.final.changes.length ? r.final.changes.join('; ') : 'no change kept'}`,
    `           ${ci(r.final.samplesPerSec)}; speedup over the baseline ${x3(r.final.speedup.median)} [${x3(r.final.speedup.low)}, ${x3(r.final.speedup.high)}]`,
    `           ${r.final.verdict}`,
    ...r.final.proposals.map((p) => `  proposed (recipe change, not kept): ${p}`),
    `settings   read from ${r.final.config.readFrom}, loader workers ${r.final.config.options.loaderWorkers}, prefetch ${r.final.config.options.prefetch}, batch ${r.final.config.options.batchSize} x ${r.final.config.options.accumulation}, ${r.final.config.options.precision}`,
    `saved      ${r.runDir} (run of kind optimise) and optimise/${r.optimiseId}/state.json in the workspace`,
  ];
  return lines.join('\n');
}

async function buildRequest(flags: OptimiseFlags, optimiseId: string) {
  const { spec, data, options } = await measuredTarget(flags);
  const parsed = OptimiseRequestSchema.safeParse({
    target: { spec, data, options: flags.memoryLimit !== undefined ? { ...options, memoryLimitBytes: flags.memoryLimit } : options, readFrom: flags.readFrom },
    preset: flags.preset,
    repeat: flags.repeat,
    steps: flags.steps,
    minWindowSeconds: flags.minWindow,
    warmupSteps: flags.warmupSteps,
    maxTrials: flags.maxTrials,
    allowRecipeChanges: flags.allowRecipeChanges === true,
    batchSearch: flags.batchSearch,
    ...(flags.lossTolerance !== undefined ? { lossTolerance: flags.lossTolerance } : {}),
    confounders: flags.confounders,
    objective: flags.objective,
    optimiseId,
  });
  if (!parsed.success) throw new ApiError('E_BAD_INPUT', `bad optimise option: ${formatIssues(parsed.error, 'request')}`);
  return parsed.data;
}

async function optimise(flags: OptimiseFlags): Promise<void> {
  // --resume takes either kind's id: an engine wizard's, or a script optimisation's run (as optimise-script --resume does).
  if (flags.resume !== undefined && (await resumeScriptOptimisation(flags.resume, flags))) return;
  const optimiseId = flags.resume ?? `optimise-${newRunId()}`;
  const request = flags.resume ? null : await buildRequest(flags, optimiseId);
  const services = await createServices({ workspaceDir: flags.workspace });
  if (request) await warnIfEmulated(services, request.target.options.device);
  // On a terminal the bar redraws in place and only finished trials stay on screen; on a pipe every line is kept.
  const tty = process.stderr.isTTY === true;
  let drawn = false;
  const say = (line: string, transient = false) => {
    if (!flags.progress) return;
    if (tty && drawn) process.stderr.write('\r\x1b[2K');
    process.stderr.write(tty && transient ? line : `${line}\n`);
    drawn = tty && transient;
  };
  const onSigint = () => {
    process.stderr.write('\ncancelling the optimisation...\n');
    void services.optimise.cancel(optimiseId);
  };
  process.on('SIGINT', onSigint);
  try {
    say(`optimisation ${optimiseId}${flags.resume ? ' resumed from its saved state' : ''} (if stopped, continue it with: trainbench optimise --resume ${optimiseId})`);
    let last = '';
    const options = {
      allowPathsOutsideWorkspace: true,
      onProgress: (p: OptimiseProgress) => {
        const line = progressLine(p);
        if (line !== last) say(line, p.finishedTrial === null && p.repetitions > 0);
        last = line;
      },
    };
    const result = request ? await services.optimise.start(request, options) : await services.optimise.resume(optimiseId, options);
    process.stdout.write((flags.json ? JSON.stringify(result, null, 2) : formatOptimise(result)) + '\n');
    if (flags.report) {
      // The wizard's run first (its attempts are the report), then the batch search it ran, so both are written up.
      const runIds = [result.runId, ...(result.batchSearch?.runId ? [result.batchSearch.runId] : [])];
      const report = await services.reports.generate({ runIds });
      process.stderr.write(reportWrittenLines(services.workspace.root, report) + '\n');
    }
  } finally {
    if (drawn) process.stderr.write('\n');
    process.off('SIGINT', onSigint);
    await services.dispose();
  }
}

export function optimiseCommand(): Command {
  const cmd = new Command('optimise').description(
    "the optimisation wizard, on an engine model or on your own command after '--': a baseline, a diagnosis, the physical limits, then one change at a time kept only when its speedup CI beats the noise",
  );
  measuredTargetOptions(cmd, '')
    .option('--read-from <where>', 'cache, or source: read the records from the source files in place (the uncached path)', choiceArg('--read-from', ReadFromSchema.options), 'cache')
    .option('--warmup-steps <n>', 'optimizer steps before the clock starts, in every repetition', intArg('--warmup-steps', 0), 5)
    .option('--steps <n>', 'optimizer steps measured per repetition', intArg('--steps', 1), 50)
    .option('--min-window <seconds>', "the shortest a repetition's measured steps may take: when the baseline's steps take less, the wizard raises --steps to about this and measures the baseline again (0: as --steps says)", secondsRangeArg('--min-window', 0, 60), 0)
    .option('--repeat <n>', 'repetitions of the baseline and pairs of every trial (below 5 no interval reaches 95%; 9 tolerates one disturbed pair)', intArg('--repeat', 2), 5)
    .option('--seed <n>', 'seed for initialisation and shuffling (the loss guard compares runs with the same seed)', intArg('--seed', 0))
    .option('--preset <name>', OptimisePresetSchema.options.join(', '), choiceArg('--preset', OptimisePresetSchema.options), 'balanced')
    .option('--max-trials <n>', 'most changes tried', intArg('--max-trials', 0), 12)
    .option('--allow-recipe-changes', 'keep a faster batch size too (it changes the training recipe; otherwise it is only proposed)')
    .option('--memory-limit <bytes>', "CPU: cap the engine's memory at this many bytes (1GiB, 512MiB) as a GPU's memory would, so the batch-size search has memory to fill", parseBytes)
    .option('--no-batch-search', 'skip the batch-size search (CUDA, or a CPU memory limit): the batch-size candidate is then twice the batch')
    .option('--loss-tolerance <r>', 'largest relative change of the mean loss a kept change may make', ratioArg('--loss-tolerance'))
    .option('--confounders <policy>', 'when the two sides of a pair saw different conditions (other processes\' CPU load, a GPU slowing down): remeasure the pair (twice at most) and leave a trial undecided if they still differ, or record them only (a shared machine)', choiceArg('--confounders', ConfounderPolicySchema.options), 'remeasure')
    .option('--objective <what>', 'throughput (samples/s, the default) or energy: samples per joule of GPU energy, from the GPUs\' power over each repetition (a CUDA target where nvidia-smi reports power)', choiceArg('--objective', WizardObjectiveSchema.options), 'throughput')
    .option('--resume <id>', "continue a cancelled or interrupted optimisation from its saved state (the other target flags are ignored); a script optimisation's run id goes on with that script")
    .option('--report', 'write the result up as an ADR report (markdown + SVG charts) in the workspace\'s reports/')
    .option('--json', 'print the result as JSON')
    .option('--no-progress', 'no progress lines on stderr')
    .option('--workspace <dir>', 'workspace folder (the wizard is saved there as a run and a state file)', defaultWorkspaceDir());
  return eitherTarget(cmd, optimise, { options: optimiseScriptCommand(), alias: 'optimise-script', run: optimiseScriptAction });
}
