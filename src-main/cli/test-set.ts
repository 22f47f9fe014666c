import { printable } from '../api/shell-word';
import type { DataSource } from '../api/training';
import { heldOutTestOf, resolveDataset } from '../core/datasets/cache-store';
import { openWorkspace } from '../core/workspace/workspace';
import { UsageError } from './usage-error';

/** `--test none`: train without a test set, even on a dataset imported with a held-out split. */
export const NO_TEST_SET = 'none';

const percent = (fraction: number) => `${+(fraction * 100).toFixed(2)}%`;

/**
 * The test set `train` evaluates on, and a line saying which (or that there is none, and what that means):
 * `--test <dataset>` or `--test none` when given; for `--data dataset:<id>` otherwise the held-out split the
 * dataset was imported with, when there is one. Other data brings its own test set (or takes it in --data).
 */
export async function chooseTestSet(data: DataSource, flag: string | undefined, workspaceDir: string): Promise<{ data: DataSource; note: string | null }> {
  if (data.kind !== 'dataset') {
    if (flag === undefined) return { data, note: null };
    const own = data.kind === 'idx' ? 'give the test files as the third and fourth paths of --data' : `--data ${data.kind} brings its own test set`;
    throw new UsageError(`--test ${JSON.stringify(flag)} chooses the test set of a workspace dataset (--data dataset:<name>); ${own}`);
  }
  if (flag !== undefined && data.test !== undefined && flag !== data.test) {
    throw new UsageError(`--data dataset:${data.train},${data.test} and --test ${JSON.stringify(flag)} name two test sets: give one`);
  }
  const without = (why: string) => ({
    data: { kind: 'dataset' as const, train: data.train },
    note: `no test set: ${why}; the run measures accuracy only on the records it trains on, which says how well it fits them, not how it does on data it has not seen`,
  });
  if (flag === NO_TEST_SET) return without('--test none');
  const chosen = flag ?? data.test;
  if (chosen !== undefined) return { data: { ...data, test: chosen }, note: `test set: ${chosen}` };

  const workspace = await openWorkspace(workspaceDir);
  const { manifest } = await resolveDataset(workspace, data.train);
  const held = await heldOutTestOf(workspace, manifest);
  // The name is manifest.json's, which a tampered workspace may hold: escaped for the terminal.
  const name = printable(manifest.name);
  if (!held) return without(`${name} was imported without a held-out split (cache build --test-fraction 0.2 holds one out; --test <dataset> chooses one)`);
  const { split } = held;
  if (!held.present) {
    return without(
      `the split held out of ${name} when it was imported, ${split.other}, is no longer in the workspace (cache build it again with --test-fraction ${split.fraction} --test-seed ${split.seed})`,
    );
  }
  return {
    data: { ...data, test: split.other },
    note: `test set: ${split.other}, the ${percent(split.fraction)} of the rows of ${name} held out when it was imported (--test none trains without one)`,
  };
}
