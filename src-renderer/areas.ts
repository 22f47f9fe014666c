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

/**
 * In the order people work: the Dashboard (what to do first, what the machine has), the Runs they come
 * back to every day, then data, the one-click Optimise, the single tools it is made of, and the reports
 * it writes.
 */
export const areas: Area[] = [
  { path: '/', name: 'dashboard', title: 'Dashboard', summary: 'Devices, and live GPU and host telemetry with the last hour’s history.' },
  {
    path: '/runs',
    name: 'runs',
    title: 'Runs',
   
    summary: 'Every training and benchmark run in the workspace, with its telemetry.',
  },
  {
    path: '/datasets',
    name: 'datasets',
    title: 'Datasets',
   
    summary: 'Import IDX, NumPy and CSV sources and cache them into fast memory-mapped shards.',
  },
  {
    path: '/optimise',
    name: 'optimise',
    title: 'Optimise',
   
    summary: 'One change at a time, measured in repeated trials, kept only when it beats the noise.',
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
    path: '/reports',
    name: 'reports',
    title: 'Reports',
   
    summary: 'ADR-style markdown reports of what was tried, measured, kept and rejected.',
  },
];
