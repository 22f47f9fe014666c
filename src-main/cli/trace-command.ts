import path from 'node:path';

import { Command } from 'commander';

import type { RunTraceResult } from '../api/reports';
import { printable } from '../api/shell-word';
import { createServices } from '../core/services';
import { defaultWorkspaceDir } from '../core/workspace/workspace';
import { writeChosenFile } from '../core/workspace/workspace-files';

/** `trainbench trace <run-id>`: the run's measured steps as Chrome trace-event JSON (Perfetto, chrome://tracing). */
export function traceCommand(out: NodeJS.WritableStream = process.stdout): Command {
  return new Command('trace')
    .description("write a benchmark (or training) run's measured steps as a Chrome trace-event JSON: one track per phase")
    .argument('<run-id>', 'the run (trainbench runs lists them)')
    .option('--out <file>', 'also write the trace to this file')
    .option('--workspace <dir>', 'workspace folder', defaultWorkspaceDir())
    .action(async (runId: string, flags: { out?: string; workspace: string }) => {
      const services = await createServices({ workspaceDir: flags.workspace });
      try {
        const result = (await services.router.dispatch('runs.trace', { id: runId })) as RunTraceResult;
        const written = [path.join(services.workspace.root, result.path)];
        if (flags.out) {
          const file = path.resolve(flags.out);
          await writeChosenFile(file, JSON.stringify(result.trace) + '\n');
          written.push(file);
        }
        const slices = result.trace.traceEvents.filter((e) => e.ph === 'X').length;
        const measured = (result.trace.metadata.measuredMs as number[] | undefined) ?? [];
        const sampled = result.trace.metadata.sampled;
        out.write(
          [
            `trace    run ${runId}: ${slices.toLocaleString('en-US')} slices over ${measured.length} repetition${measured.length === 1 ? '' : 's'}, tracks step + phases`,
            ...(typeof sampled === 'string' ? [`sampled  ${printable(sampled)}`] : []),
            `written  ${written.join(', ')}`,
            'open it  in https://ui.perfetto.dev or chrome://tracing',
          ].join('\n') + '\n',
        );
      } finally {
        await services.dispose();
      }
    });
}
