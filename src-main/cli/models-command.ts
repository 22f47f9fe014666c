import path from 'node:path';

import { Command, InvalidArgumentError } from 'commander';

import type { DatasetSummary } from '../api/datasets';
import type { ModelEntry } from '../api/model-files';
import type { SizedFamily } from '../api/model-sizing';
import { SIZED_FAMILIES, sizeModel } from '../api/model-sizing';
import { isBuiltinModel } from '../api/model-spec';
import { shellWord } from '../api/shell-word';
import { createServices } from '../core/services';
import { defaultWorkspaceDir } from '../core/workspace/workspace';
import { choiceArg, intArg } from './train-inputs';
import { jsonText, textOut } from './json-out';
import { UsageError } from './usage-error';

/** One line per model: name, family, and why a spec file cannot be used. */
export function formatModels(models: readonly ModelEntry[]): string {
  const width = Math.max(...models.map((m) => m.name.length));
  return models
    .map((m) => `${m.name.padEnd(width)}  ${m.source === 'builtin' ? 'built-in' : 'file    '}  ${m.family ?? '?'}${m.problem ? `  ${m.problem}` : ''}`)
    .join('\n');
}

/** A commander parser for `--widths 64,32`: whole numbers >= 1, naming the value it refuses. */
export function widthsArg(value: string): number[] {
  const parts = value.split(',').map((p) => p.trim());
  const widths = parts.map(Number);
  const bad = parts.find((p, i) => p === '' || !Number.isInteger(widths[i]) || widths[i] < 1);
  if (bad !== undefined || parts.length > 64) {
    throw new InvalidArgumentError(`--widths must be 1 to 64 whole numbers >= 1 separated by commas, got ${JSON.stringify(value)}${bad !== undefined ? ` (${JSON.stringify(bad)})` : ''}`);
  }
  return widths;
}

/** The workspace dataset `value` names (`dataset:<id>`, its id or its name), or an error listing the ones there are. */
export function datasetNamed(value: string, datasets: readonly DatasetSummary[]): DatasetSummary {
  const key = value.replace(/^dataset:/, '');
  const usable = datasets.filter((d) => d.problem === null);
  const byId = usable.find((d) => d.id === key);
  if (byId) return byId;
  const named = usable.filter((d) => d.name === key);
  if (named.length === 1) return named[0];
  if (named.length > 1) throw new UsageError(`--data ${JSON.stringify(value)} names ${named.length} datasets: choose one of ${named.map((d) => `dataset:${d.id}`).join(', ')}`);
  const there = usable.length ? usable.map((d) => `dataset:${d.id} (${d.name})`).join(', ') : 'none: trainbench cache build makes one';
  throw new UsageError(`--data ${JSON.stringify(value)} is no dataset of this workspace; there are: ${there}`);
}

interface SizeOptions {
  data: string;
  widths?: number[];
  blocksPerStage?: number;
  save?: string;
  replace?: boolean;
  json?: boolean;
  workspace: string;
}

/**
 * `trainbench models`: the models a run can train (built-ins and the workspace's spec files), and
 * `models size`, a family sized to a dataset of the workspace (ADR 0036), printed or saved under models/.
 */
export function modelsCommand(out: NodeJS.WritableStream = process.stdout): Command {
  const models = new Command('models').description("list the models a run can train; 'models size' sizes a family to a dataset of the workspace");
  models
    .command('list', { isDefault: true })
    .description('list the built-in models and the spec files of the workspace, with the problem of each broken one')
    .option('--json', 'print the list as JSON (the models.list answer)')
    .option('--workspace <dir>', 'workspace folder', defaultWorkspaceDir())
    .action(async (opts: { json?: boolean; workspace: string }) => {
      const services = await createServices({ workspaceDir: opts.workspace });
      try {
        const list = (await services.router.dispatch('models.list', {})) as ModelEntry[];
        out.write((opts.json ? jsonText(list, 2) : formatModels(list)) + '\n');
      } finally {
        await services.dispose();
      }
    });
  models
    .command('size')
    .description("size a model family to a dataset of the workspace: input from its field 'x', outputs from its label; --save writes it under models/")
    .argument('<family>', SIZED_FAMILIES.join(', '), choiceArg('family', SIZED_FAMILIES))
    .requiredOption('--data <dataset>', 'dataset:<id>, or the id or name of a dataset of the workspace (trainbench cache list)')
    .option('--widths <n,n,...>', "one width per hidden layer (mlp), conv layer (cnn) or stage (bottleneck_resnet); default: the family's", widthsArg)
    .option('--blocks-per-stage <n>', 'bottleneck_resnet: blocks per stage', intArg('--blocks-per-stage', 1))
    .option('--save <name>', 'write it as models/<name>.json (letters, digits, - and _)')
    .option('--replace', 'with --save: replace a spec file of that name')
    .option('--json', 'print {path, spec} as JSON (path: the file written, null without --save)')
    .option('--workspace <dir>', 'workspace folder', defaultWorkspaceDir())
    .action(async (family: SizedFamily, opts: SizeOptions) => {
      if (opts.replace && opts.save === undefined) throw new UsageError('--replace replaces the file --save writes: give --save <name> too');
      if (opts.blocksPerStage !== undefined && family !== 'bottleneck_resnet') throw new UsageError(`--blocks-per-stage is the board network's (bottleneck_resnet), not ${family}'s: use --widths for its depth`);
      const services = await createServices({ workspaceDir: opts.workspace });
      try {
        const dataset = datasetNamed(opts.data, (await services.router.dispatch('datasets.list', {})) as DatasetSummary[]);
        const sized = sizeModel(family, dataset.fields, { widths: opts.widths, blocksPerStage: opts.blocksPerStage });
        if (!sized.spec) throw new UsageError(`${family} does not fit ${dataset.name}: ${sized.problem}`);
        let saved: string | null = null;
        if (opts.save !== undefined) {
          const result = (await services.router.dispatch('models.save', { name: opts.save, spec: sized.spec, overwrite: opts.replace === true })) as { path: string };
          saved = result.path;
        }
        if (opts.json) {
          out.write(jsonText({ path: saved, spec: sized.spec }, 2) + '\n');
          return;
        }
        out.write(`${textOut(`${family} sized to ${dataset.name} (${sized.summary})`)}\n${jsonText(sized.spec)}\n`);
        // The command as typed from anywhere: the workspace named unless it is the default one.
        const where = path.resolve(opts.workspace) === path.resolve(defaultWorkspaceDir()) ? '' : ` --workspace ${shellWord(opts.workspace)}`;
        // --model takes the name it was saved under, unless a built-in has that name (the built-in comes first).
        const name = saved ? path.basename(saved, '.json') : '';
        const model = saved && !isBuiltinModel(name) ? name : saved;
        if (saved) out.write(`saved ${saved}; train it: trainbench train --model ${model} --data dataset:${dataset.id}${where}\n`);
        else out.write('--save <name> writes it under models/, where every form and command can choose it\n');
      } finally {
        await services.dispose();
      }
    });
  return models;
}
