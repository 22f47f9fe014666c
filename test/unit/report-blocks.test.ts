import { describe, expect, it } from 'vitest';

import { stripBlockMarkers } from '../../src-main/api/reports';
import { blockHashes, joinSegments, mergeRegenerated, parseSegments, renderBlock } from '../../src-main/core/reports/blocks';
import { slugOf } from '../../src-main/core/reports/report-store';
import { parseSections } from '../../src-main/cli/report-command';

const doc = (status: string, limits: string) =>
  ['# 1. Title', '', '## Status', '', 'Proposed', '', renderBlock('status', status), '## Limits', '', renderBlock('limits', limits)].join('\n');

describe('generated blocks', () => {
  it('parse into text and blocks and join back to the same markdown', () => {
    const md = doc('Generated from 2 runs.', '| a | b |\n| :-- | --: |\n| x | 1 |');
    const { segments, problems } = parseSegments(md);
    expect(problems).toEqual([]);
    expect(segments.filter((s) => s.kind === 'block').map((s) => (s.kind === 'block' ? s.id : ''))).toEqual(['status', 'limits']);
    expect(joinSegments(segments)).toBe(md);
  });

  it('keep an unmatched begin marker as text and say where it is', () => {
    const md = 'intro\n<!-- tb:begin status -->\nno end here\n';
    const { segments, problems } = parseSegments(md);
    expect(segments).toEqual([{ kind: 'text', text: 'intro\n<!-- tb:begin status -->\nno end here\n' }]);
    expect(problems).toEqual(['the marker "<!-- tb:begin status -->" (line 2) has no matching "<!-- tb:end status -->" before the next marker; it was kept as your text']);
  });

  it('merge: fresh bodies in, text outside kept, new blocks added after their predecessor, deleted ones left out', () => {
    const first = doc('old status', 'old limits');
    const hashes = blockHashes(first);
    const edited = first.replace('Proposed', 'Accepted').replace('## Limits', 'My note.\n\n## Limits');
    const fresh = doc('new status', 'new limits') + '\n## Decision\n\n' + renderBlock('decision', 'Keep the baseline.');
    const merged = mergeRegenerated(edited, fresh, hashes);
    expect(merged.markdown).toContain('Accepted');
    expect(merged.markdown).toContain('My note.');
    expect(merged.markdown).toContain('new status');
    expect(merged.markdown).not.toContain('old limits');
    expect(merged.markdown.indexOf('Keep the baseline.')).toBeGreaterThan(merged.markdown.indexOf('new limits'));
    expect(merged.markdown).toContain('## Decision');
    expect(merged.notes).toEqual(['block "decision" is new in this version of the report and was added']);

    const withoutLimits = edited.replace(/<!-- tb:begin limits -->[\s\S]*<!-- tb:end limits -->\n/, '');
    const again = mergeRegenerated(withoutLimits, fresh, { ...hashes, decision: 'x' });
    expect(again.markdown).not.toContain('new limits');
    expect(again.notes).toContain('block "limits" was deleted by hand and is not added back (delete the report and generate it again to get it)');
  });

  it('merge: says when an edit inside a block is replaced, not when the block was left alone', () => {
    const first = doc('status text', 'limits text');
    const hashes = blockHashes(first);
    const fresh = doc('status text 2', 'limits text 2');
    expect(mergeRegenerated(first, fresh, hashes).notes).toEqual([]);
    const notes = mergeRegenerated(first.replace('limits text', 'my limits'), fresh, hashes).notes;
    expect(notes).toEqual(['your edits inside the generated block "limits" were replaced (write prose outside the tb:begin/tb:end markers to keep it)']);
  });

  it('strip to markdown without markers for a preview', () => {
    expect(stripBlockMarkers(doc('s', 'l'))).toBe('# 1. Title\n\n## Status\n\nProposed\n\ns\n\n## Limits\n\nl\n');
  });
});

describe('report names and sections', () => {
  it('slug titles to whole words of at most 48 characters', () => {
    expect(slugOf('Training performance of mlp on fashion-mnist-train (60000 records)')).toBe('training-performance-of-mlp-on-fashion-mnist');
    expect(slugOf('Batch size: MLP!')).toBe('batch-size-mlp');
    expect(slugOf('¿¡…')).toBe('report');
    expect(slugOf('x'.repeat(80))).toBe('x'.repeat(48));
  });

  it('--sections takes known sections in the order given and names the unknown', () => {
    expect(parseSections('decision,status')).toEqual(['decision', 'status']);
    expect(() => parseSections('status,verdict,foo')).toThrow('--sections takes a comma-separated list of status, context, reproduce, phases, limits, attempts, decision, consequences; not "verdict", "foo"');
    expect(() => parseSections(',')).toThrow(/got none/);
  });
});
