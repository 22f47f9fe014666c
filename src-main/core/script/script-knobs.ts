import type { ScriptOverrides } from '../../api/script-target';
import type { Proposal, ScriptKnobContext } from '../knobs/knob';
import { toProposal } from '../knobs/knob';
import { SCRIPT_KNOBS_IN_ORDER } from '../knobs/knob-table';

export type { ScriptKnobContext } from '../knobs/knob';
export { effective } from '../knobs/knob';

/** Each override's next step from the current best, in the order the wizard tries them (from the knob table). */
export const SCRIPT_KNOBS: ((o: ScriptOverrides, ctx: ScriptKnobContext) => Proposal)[] = SCRIPT_KNOBS_IN_ORDER.map(
  (knob) => (o, ctx) => toProposal(knob.setting, knob.kind, knob.propose(o, ctx)),
);
