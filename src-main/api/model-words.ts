// A model spec in words for people (reports, run pages): the JSON a spec file holds is for the engine.
import type { ModelSpec } from './model-spec';
import { ModelSpecSchema } from './model-spec';

/** An image's single channel left out ("28x28"), as the forms say it. */
const dims = (xs: readonly number[]) => (xs.length === 3 && xs[0] === 1 ? xs.slice(1) : xs).join('x');
const chain = (xs: readonly number[]) => xs.join('-');

/** One spec as a line: family, input, layers and head; `null` for something that is no valid spec. */
export function modelSpecWords(raw: unknown): string | null {
  const parsed = ModelSpecSchema.safeParse(raw);
  return parsed.success ? wordsOf(parsed.data) : null;
}

function wordsOf(spec: ModelSpec): string {
  if (spec.family === 'bottleneck_resnet') {
    return (
      `bottleneck ResNet, input ${dims(spec.input)}, stem ${spec.stemWidth} channels, stages of ${chain(spec.layers)} blocks ` +
      `(widths ${chain(spec.widths)}, strides ${chain(spec.strides)}, expansion ${spec.expansion}), head ${spec.headChannels} channels, ` +
      `${spec.policyClasses} policy classes + value`
    );
  }
  const head = `${spec.outputs} ${spec.task === 'regression' ? 'regression outputs' : 'classes'}`;
  const dropout = spec.dropout > 0 ? `, dropout ${spec.dropout}` : '';
  if (spec.family === 'mlp') {
    return `MLP, input ${dims(spec.input)}, hidden layers ${spec.hidden.length ? chain(spec.hidden) : 'none'}${dropout}, ${head}`;
  }
  const conv = `conv channels ${chain(spec.channels)} (strides ${chain(spec.strides)}, ${spec.kernel}x${spec.kernel} kernels${spec.batchNorm ? ', batch norm' : ''})`;
  return `CNN, input ${dims(spec.input)}, ${conv}, ${spec.hidden ? `hidden ${spec.hidden}` : 'no hidden layer'}${dropout}, ${head}`;
}
