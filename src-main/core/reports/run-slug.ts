import { createHash } from 'node:crypto';

/** A run id as it fits a report's figure names and block markers as it is: lower case, digits and "-". */
const FITS = /^[a-z0-9][a-z0-9-]{0,63}$/;

/**
 * A run id as a report's figure file names and block ids take it ([a-z0-9-], at most 73 characters). A run id may
 * hold "_", "." and upper case, and be 128 characters long (a folder copied in by hand): such an id is lowered and
 * cut, with a short hash of the whole id, so two runs never share a figure or a block.
 */
export function runSlug(id: string): string {
  if (FITS.test(id)) return id;
  const clean = id.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 64).replace(/-+$/, '');
  return `${clean || 'run'}-${createHash('sha256').update(id).digest('hex').slice(0, 8)}`;
}
