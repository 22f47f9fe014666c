/**
 * The terms the workbench uses, each explained once where it appears (a tooltip on the term): a person who has not
 * read the ADRs still reads the page (issue 27 item 10).
 */
export const GLOSSARY = {
  'A/B/A/B':
    'The current best (A) and the change (B) are measured in turns, A, B, A, B…, so that a drift of the machine (it warms up, another job starts) hits both alike; each pair gives one ratio.',
  CI: 'Confidence interval: the range the true median lies in with the stated confidence (95% unless said: fewer than 6 repetitions cover less, and the figure names how much), from the repetitions measured. Two settings differ only when their intervals say so.',
  'noise floor':
    'How much the baseline varies between its own repetitions (half the width of its median’s interval, relative to it): a change must gain more than this to be kept.',
  ADR: 'Architecture decision record: a short markdown write-up of what was tried, measured, kept and rejected, and why.',
  'consumer blocked': 'The share of the time the training loop waited for the next batch: near 0% the loader keeps up; high, the loader is the bottleneck.',
} as const;
