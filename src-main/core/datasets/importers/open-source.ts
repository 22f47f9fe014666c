import type { SourceSpec } from '../../../api/datasets';
import { boardSource } from './board-source';
import { csvSource } from './csv-source';
import { idxSource } from './idx-source';
import { npyFileSource } from './npy-source';
import { npzSource } from './npz-source';
import { rawSource } from './raw-source';
import type { RecordSource } from './record-source';
import { zipSources } from './record-source';

/** Opens any source the cache builder understands; paths must already be resolved and allowed. */
export async function openSource(spec: SourceSpec): Promise<RecordSource> {
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
