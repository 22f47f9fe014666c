import { promises as fs } from 'node:fs';
import path from 'node:path';

import { ApiError } from '../api/errors';
import type { RunDetail, RunSummary, TrainEvent } from '../api/training';
import { TrainEventSchema } from '../api/training';
import type { Workspace } from './workspace';

const MAX_STEP_EVENTS = 2000;

type RunJson = {
  id?: string;
  kind?: string;
  status?: string;
  createdAt?: string;
  finishedAt?: string;
  config?: { spec?: { family?: string }; cachedData?: { description?: string }; dataset?: string };
  result?: { test?: { accuracy?: number | null }; samplesPerSec?: number; telemetry?: { gpuUtilizationMean?: number | null }; dataset?: string };
  error?: { code?: string; message?: string };
};

function summarize(id: string, run: RunJson): RunSummary {
  const title =
    run.kind === 'train'
      ? `${run.config?.spec?.family ?? 'model'} on ${run.config?.cachedData?.description ?? 'data'}`
      : run.kind === 'loader-benchmark'
        ? `loader benchmark of ${run.result?.dataset ?? run.config?.dataset ?? 'a dataset'}`
        : (run.kind ?? 'run');
  return {
    id,
    kind: run.kind ?? 'unknown',
    status: run.status ?? 'unknown',
    createdAt: run.createdAt ?? '',
    finishedAt: run.finishedAt ?? null,
    title,
    testAccuracy: run.result?.test?.accuracy ?? null,
    samplesPerSec: run.result?.samplesPerSec ?? null,
    gpuUtilizationMean: run.result?.telemetry?.gpuUtilizationMean ?? null,
    error: run.error ? `${run.error.code ?? 'E_INTERNAL'}: ${run.error.message ?? ''}` : null,
    problem: null,
  };
}

async function readRun(workspace: Workspace, id: string): Promise<RunJson> {
  const file = workspace.resolve(path.join('runs', id, 'run.json'));
  return JSON.parse(await fs.readFile(file, 'utf8')) as RunJson;
}

/** Every run, newest first; an unreadable run.json is listed with its problem, never fatal. */
export async function listRuns(workspace: Workspace): Promise<RunSummary[]> {
  const ids = await fs.readdir(workspace.resolve('runs')).catch(() => [] as string[]);
  const out: RunSummary[] = [];
  for (const id of ids.sort().reverse()) {
    try {
      out.push(summarize(id, await readRun(workspace, id)));
    } catch (err) {
      out.push({ id, kind: 'unknown', status: 'unreadable', createdAt: '', finishedAt: null, title: id, testAccuracy: null, samplesPerSec: null, gpuUtilizationMean: null, error: null, problem: (err as Error).message });
    }
  }
  return out;
}

/** One run with its events; step events are thinned evenly so a long run still charts quickly. */
export async function readRunDetail(workspace: Workspace, id: string): Promise<RunDetail> {
  if (!/^[\w.-]+$/.test(id)) throw new ApiError('E_BAD_INPUT', `${JSON.stringify(id)} is not a run id`);
  let record: RunJson;
  try {
    record = await readRun(workspace, id);
  } catch (err) {
    throw new ApiError('E_BAD_INPUT', `run ${id} cannot be read: ${(err as Error).message}`);
  }
  const text = await fs.readFile(workspace.resolve(path.join('runs', id, 'events.jsonl')), 'utf8').catch(() => '');
  const events: TrainEvent[] = [];
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    try {
      const parsed = TrainEventSchema.safeParse(JSON.parse(line));
      if (parsed.success) events.push(parsed.data);
    } catch {
      // a line cut off by a crash: the rest still counts
    }
  }
  const stepCount = events.filter((e) => e.type === 'step').length;
  const stride = Math.max(1, Math.ceil(stepCount / MAX_STEP_EVENTS));
  let step = -1;
  const kept = events.filter((e) => e.type !== 'step' || ++step % stride === 0 || step === stepCount - 1);
  return { summary: summarize(id, record), record, events: kept };
}
