import type { TestSplit } from '../../api/datasets';
import { splitSeedProblem, testFractionProblem } from '../../api/datasets';
import { ApiError } from '../../api/errors';
import { seededRandom } from '../stats/medians';
import type { Chunk, RecordSource } from './importers/record-source';
import { recordBytes } from './importers/record-source';

/**
 * Held-out test splits: `fraction` of a source's records, drawn by `seed`, go to the test part and the rest
 * to the training part. Both parts stream the same source through the same draw, so they are disjoint, together
 * are the whole source, and the same source, fraction and seed always draw the same records.
 */

/**
 * Bumped if the draw below (selection sampling over stats' seededRandom) ever changes: a split must stay what it
 * was for a given seed (test/unit/held-out-split.test.ts pins one draw).
 */
export const SPLIT_DRAW_VERSION = 1;

/** The smallest fraction (two significant digits, rounded up) that holds out one of `records`. */
function leastFraction(records: number): number {
  const exact = 0.5 / records;
  const scale = 10 ** (Math.ceil(-Math.log10(exact)) + 1);
  return Math.ceil(exact * scale) / scale;
}

/** How many of `records` a fraction holds out; throws, naming the values, when either part would be empty. */
export function heldOutCount(records: number, split: TestSplit): number {
  const problem = testFractionProblem(split.fraction) ?? splitSeedProblem(split.seed);
  if (problem) throw new ApiError('E_BAD_INPUT', problem);
  const test = Math.round(split.fraction * records);
  if (test < 1 || records - test < 1) {
    const least = records >= 2 ? `: use a fraction of at least ${leastFraction(records)} here, or more rows` : ': a split needs at least 2 records';
    throw new ApiError('E_BAD_INPUT', `test fraction ${split.fraction} of ${records} records holds out ${test}, which leaves ${test < 1 ? 'no test set' : 'no training set'}${least}`);
  }
  return test;
}

/**
 * The draw, one record at a time in source order: true when the record is held out. Selection sampling
 * (Knuth's algorithm S): record i is drawn with probability (still wanted) / (still to come), which picks exactly
 * `test` records, every set of them equally likely, with no memory per record, so a file of any size streams.
 */
export function heldOutDraw(records: number, split: TestSplit): () => boolean {
  const test = heldOutCount(records, split);
  const random = seededRandom(split.seed);
  let seen = 0;
  let drawn = 0;
  return () => {
    if (seen >= records) throw new ApiError('E_INTERNAL', `the split was asked about record ${seen} of a source of ${records}`);
    const held = random() * (records - seen) < test - drawn;
    seen++;
    if (held) drawn++;
    return held;
  };
}

/** The indices of the held-out records, in order: what heldOutDraw picks, for tests and tools. */
export function heldOutIndices(records: number, split: TestSplit): number[] {
  const draw = heldOutDraw(records, split);
  const out: number[] = [];
  for (let i = 0; i < records; i++) if (draw()) out.push(i);
  return out;
}

/**
 * One part of a source split by `split`: its records in source order (training shuffles every epoch), the
 * source's fields (so text classes are the whole file's in both parts), and the split in `options`, so the
 * fingerprint and the cache id differ from the whole source's and from the other part's.
 */
export function heldOutPart(source: RecordSource, split: TestSplit, part: 'train' | 'test'): RecordSource {
  const test = heldOutCount(source.records, split);
  const records = part === 'test' ? test : source.records - test;
  const widths = source.fields.map(recordBytes);
  const percent = `${+(split.fraction * 100).toFixed(2)}%`;
  return {
    kind: source.kind,
    description: `${source.description} (${part === 'test' ? `the ${percent} held out as the test set` : `the training part, ${percent} held out as the test set`}, seed ${split.seed})`,
    records,
    fields: source.fields,
    files: source.files,
    sourceBytes: source.sourceBytes,
    options: { source: source.options, split: { fraction: split.fraction, seed: split.seed, part, draw: SPLIT_DRAW_VERSION } },
    uncachedReason: 'a held-out split takes records from all over the source: the loader cannot read it in place',
    rawLayout: () => null,
    async *chunks(maxRecords, signal) {
      const draw = heldOutDraw(source.records, split);
      const keep = part === 'test';
      for await (const chunk of source.chunks(maxRecords, signal)) {
        const kept: number[] = [];
        for (let r = 0; r < chunk.count; r++) if (draw() === keep) kept.push(r);
        if (kept.length === 0) continue;
        const out: Chunk = {
          count: kept.length,
          fields: chunk.fields.map((bytes, i) => {
            const w = widths[i];
            const picked = new Uint8Array(kept.length * w);
            kept.forEach((r, j) => picked.set(bytes.subarray(r * w, (r + 1) * w), j * w));
            return picked;
          }),
        };
        yield out;
      }
    },
  };
}
