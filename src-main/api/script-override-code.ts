import type { ScriptTarget } from './script-target';
import { shellLine } from './shell-word';

/** A value as Python source: True/False, numbers as they are, strings quoted. */
function python(v: string | number | boolean): string {
  if (typeof v === 'boolean') return v ? 'True' : 'False';
  return typeof v === 'number' ? String(v) : JSON.stringify(v);
}

/** Where the kept overrides ran, for code that names it (autocast's device type). */
export interface CodeContext {
  /** The device the script trained on ('cpu', 'cuda:0'); absent: a CUDA script is assumed. */
  device?: string;
}

/**
 * The lines a user writes into their own script to have these overrides without Trainbench's probe:
 * the DataLoader's arguments in one call (DistributedDataParallel's likewise), the torch flags as statements, mixed precision as the
 * autocast block (and GradScaler lines for fp16) the probe applied. One place for the app's final
 * card, the CLI's summary and the ADR; each override's first line stands for it in a table.
 */
export function overrideCode(overrides: Record<string, string | number | boolean>, context: CodeContext = {}): string[] {
  const entries = Object.entries(overrides).sort(([a], [b]) => a.localeCompare(b));
  const loaderArgs = entries.filter(([k]) => k.startsWith('dataloader.')).map(([k, v]) => `${k.slice('dataloader.'.length)}=${python(v)}`);
  const device = JSON.stringify((context.device ?? 'cuda').split(':')[0]);
  const code: string[] = [];
  if (loaderArgs.length) code.push(`DataLoader(..., ${loaderArgs.join(', ')})`);
  const ddpArgs = entries.filter(([k]) => k.startsWith('ddp.')).map(([k, v]) => `${k.slice('ddp.'.length)}=${python(v)}`);
  if (ddpArgs.length) code.push(`model = DistributedDataParallel(model, ..., ${ddpArgs.join(', ')})`);
  for (const [k, v] of entries) {
    if (k === 'cudnn.benchmark') code.push(`torch.backends.cudnn.benchmark = ${python(v)}`);
    else if (k === 'matmul.precision') code.push(`torch.set_float32_matmul_precision(${python(v)})`);
    // The script's optimizer class is its own: the argument is what to add where it is made.
    else if (k === 'optim.impl') code.push(`optimizer = torch.optim.YourOptimizer(params, ..., ${String(v)}=True)`);
    else if (k === 'amp.dtype') code.push(...ampCode(String(v), device));
    else if (k === 'memory.channels_last' && v === true) {
      code.push('model = model.to(memory_format=torch.channels_last)', 'inputs = inputs.to(memory_format=torch.channels_last)  # each 4-D batch, before model(inputs)');
    } else if (k === 'memory.channels_last') continue;
    else if (k === 'optim.set_to_none') code.push(`optimizer.zero_grad(set_to_none=${python(v)})`);
    else if (k === 'copy.non_blocking') code.push(`inputs = inputs.to(device, non_blocking=${python(v)})  # each batch tensor; with pin_memory=True on the DataLoader`);
    else if (k === 'compile.mode') code.push(`model.compile(mode=${python(v)})  # torch 2.2+, in place; before 2.2: model = torch.compile(model, mode=${python(v)})`);
    // A key this version does not know: said plainly rather than guessed at.
    else if (!k.startsWith('dataloader.') && !k.startsWith('ddp.')) code.push(`# ${k}=${String(v)}: no Python equivalent known to this version`);
  }
  return code;
}

/** What the probe does for amp.dtype, as the script would write it: the forward under autocast, fp16's loss scaling. */
function ampCode(dtype: string, device: string): string[] {
  const torchDtype = dtype === 'fp16' ? 'torch.float16' : 'torch.bfloat16';
  const forward = [`with torch.autocast(device_type=${device}, dtype=${torchDtype}):`, '    output = model(inputs)  # the forward and the loss, as the script computes them', '    loss = loss_fn(output, targets)'];
  if (dtype !== 'fp16') return forward;
  return [
    ...forward,
    `scaler = torch.amp.GradScaler(${device})  # once, before the loop`,
    'scaler.scale(loss).backward()  # instead of loss.backward()',
    'scaler.unscale_(optimizer)  # before clip_grad_norm_, where the script clips',
    'scaler.step(optimizer)  # instead of optimizer.step()',
    'scaler.update()',
  ];
}

/**
 * The kept overrides two ways: the command that runs the script unchanged with them (Trainbench's
 * probe applies them; without --steps it trains to the script's own end), and the lines a user
 * writes into their own script to have them without Trainbench.
 */
export function scriptUse(target: ScriptTarget, overrides: Record<string, string | number | boolean>, device?: string): { command: string; code: string[] } {
  const entries = Object.entries(overrides).sort(([a], [b]) => a.localeCompare(b));
  const flags = [
    'trainbench',
    'benchmark-training',
    '--repeat',
    '1',
    '--cwd',
    target.cwd,
    ...Object.entries(target.env).flatMap(([k, v]) => ['--env', `${k}=${v}`]),
    ...entries.flatMap(([k, v]) => ['--set', `${k}=${String(v)}`]),
    '--',
    ...target.command,
  ];
  return { command: shellLine(flags), code: overrideCode(overrides, { device }) };
}
