import type { SourceSpec } from '../../../api/datasets';
import { ApiError } from '../../../api/errors';
import { boardSource } from './board-source';
import { csvSource } from './csv-source';
import { idxSource } from './idx-source';
import { npyFileSource } from './npy-source';
import { npzSource } from './npz-source';
import { rawSource } from './raw-source';
import type { RecordSource } from './record-source';
import { recordBytes, zipSources } from './record-source';

/**
 * One record's bytes at most, over its fields (a 4096x4096 RGB image is 48 MiB; a 256^3 float32 volume 64 MiB). Records
 * are read whole (a preview, the cache builder's chunks), so a header that claims bigger ones (a few bytes of a planted
 * or compressed file) would make the process allocate what it claims.
 */
export const MAX_RECORD_BYTES = 64 << 20;

/** Opens any source the cache builder understands; paths must already be resolved and allowed. */
export async function openSource(spec: SourceSpec): Promise<RecordSource> {
  const source = await openAny(spec);
  const bytes = source.fields.reduce((a, f) => a + recordBytes(f), 0);
  if (bytes > MAX_RECORD_BYTES) {
    const fields = source.fields.map((f) => `${f.name} ${f.shape.join('x') || 'scalar'} ${f.dtype}`).join(', ');
    throw new ApiError('E_DATA', `${source.description}: one record is ${bytes} bytes (${fields}), more than the ${MAX_RECORD_BYTES >> 20} MiB a record may hold`);
  }
  return source;
}

async function openAny(spec: SourceSpec): Promise<RecordSource> {
  switch (spec.kind) {
    case 'idx': {
      const parts = await Promise.all(spec.files.map((f) => idxSource(f.path, f.field)));
      return parts.length === 1 ? parts[0] : zipSources('idx', spec.files.map((f) => f.path).join(', '), parts, spec.files);
    }
    case 'npy':
      return npyFileSource(spec.path, spec.field);
    case 'npy-fields': {
      const parts = await Promise.all(spec.files.map((f) => npyFileSource(f.path, f.field)));
      return parts.length === 1 ? parts[0] : zipSources('npy-fields', spec.files.map((f) => f.path).join(', '), parts, spec.files);
    }
    case 'npz':
      return npzSource(spec.path);
    case 'raw':
      return rawSource(spec.files);
    case 'csv':
      return csvSource(spec.path, spec.label, spec.labelDtype);
    case 'synthetic-board':
      return boardSource(spec.records, spec.seed);
  }
}
