/** What the Benchmarks form holds; the view turns it into a benchmark.training request. */
export interface BenchmarkFormValues {
  /** A built-in's name, 'sized:<family>' (sized to the chosen dataset) or a workspace spec file's path. */
  model: string;
  /** 'fashion-mnist', 'example-board' or 'dataset:<id>'. */
  data: string;
  device: string;
  precision: 'fp32' | 'bf16' | 'fp16';
  batchSize: number;
  loaderWorkers: number;
  prefetch: number;
  warmupSteps: number;
  steps: number;
  repeat: number;
}
