import { measurementLabel } from '../../api/measurement-words';
import type { Diagnosis, OptimiseChange, OptimiseConfig } from '../../api/optimise';
import type { EngineOffer, KnobContext } from './knob';
import { toProposal } from './knob';
import type { Offered } from './knob-table';
import { engineOrder } from './knob-table';

export type { KnobContext } from './knob';

/** The hypothesis in the diagnosis's own numbers, where a finding the knob names as its evidence is there. */
function because(knob: Offered<EngineOffer>, d: Diagnosis): string | null {
  const hit = knob.evidence.map((id) => d.findings.find((x) => x.id === id)).find((x) => x !== undefined);
  // In words, not the JSON key: the hypothesis is read in the trial table and the report (issue 27).
  return hit ? `${measurementLabel(hit.measurement.name)}: ${hit.measurement.value.toFixed(1)}${hit.measurement.unit === '%' ? '%' : ` ${hit.measurement.unit}`}` : null;
}

export interface Candidates {
  changes: OptimiseChange[];
  skipped: { change: OptimiseChange; why: string }[];
}

/** Every knob's next step from `best`, ordered by the diagnosis, less the knobs in `exhausted`. */
export function candidateChanges(best: OptimiseConfig, diagnosis: Diagnosis, ctx: KnobContext, exhausted: readonly string[] = []): Candidates {
  const out: Candidates = { changes: [], skipped: [] };
  // High data wait puts the loader first even when the arithmetic phases add up to more (the GNN guide's first branch).
  const order = engineOrder(diagnosis.findings.some((f) => f.id === 'data-wait') ? 'data' : diagnosis.bound);
  for (const knob of order) {
    const p = toProposal(knob.setting, knob.kind, knob.propose(best, ctx));
    if ('settled' in p) continue;
    if ('skip' in p) out.skipped.push({ change: p.skip, why: p.why });
    else if (!exhausted.includes(knob.setting)) {
      const why = because(knob, diagnosis);
      out.changes.push(why ? { ...p.change, hypothesis: `${p.change.hypothesis} (${why})` } : p.change);
    }
  }
  return out;
}

/** The configuration with one change applied. */
export function applyChange(config: OptimiseConfig, c: OptimiseChange): OptimiseConfig {
  if (c.knob === 'readFrom') return { ...config, readFrom: c.to as OptimiseConfig['readFrom'] };
  if (!(c.knob in config.options)) throw new RangeError(`applyChange: ${c.knob} is not a setting of the target`);
  return { ...config, options: { ...config.options, [c.knob]: c.to } };
}
