/** The workbench's areas, in navigation order. */
export interface Area {
  path: string;
  name: string;
  title: string;
  /** One line on what the area is for. */
  summary: string;
  /** Present for areas whose capability is not in this build yet. */
  arrivesWith?: string;
}

export const areas: Area[] = [
  { path: '/', name: 'dashboard', title: 'Dashboard', summary: 'Devices, live GPU and host telemetry, and the engine host’s health.' },
  {
    path: '/datasets',
    name: 'datasets',
    title: 'Datasets',
    summary: 'Import IDX, NumPy and CSV sources and cache them into fast memory-mapped shards.',
  },
  {
    path: '/benchmarks',
    name: 'benchmarks',
    title: 'Benchmarks',
    summary: 'Data-loader and training benchmarks with a per-phase breakdown of each step.',
  },
  {
    path: '/batch-size',
    name: 'batch-size',
    title: 'Batch size',
    summary: 'Find the largest batch that fits and the one with the best throughput under a memory headroom.',
  },
  {
    path: '/optimise',
    name: 'optimise',
    title: 'Optimise',
    summary: 'One change at a time, measured in repeated trials, kept only when it beats the noise.',
  },
  {
    path: '/reports',
    name: 'reports',
    title: 'Reports',
    summary: 'ADR-style markdown reports of what was tried, measured, kept and rejected.',
  },
  {
    path: '/runs',
    name: 'runs',
    title: 'Runs',
    summary: 'Every training and benchmark run in the workspace, with its telemetry.',
  },
];
