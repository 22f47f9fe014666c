// Checkpoints are safetensors: read back here with an independent parser of the format.
import { lstatSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { blobs, boardData, loadAddon, MLP_SPEC, RESNET_SPEC, thrown } from '../helpers/native';
import { readSafetensors } from '../helpers/safetensors';
import { tempDir } from '../helpers/temp-dir';

const addon = loadAddon();
const json = JSON.stringify;
const tmp = tempDir();
afterAll(() => tmp.cleanup());

async function trainedResnet() {
  const t = new addon.Trainer(json(RESNET_SPEC), json({ seed: 2 }));
  t.setData('train', boardData(32, 3));
  await t.train(json({ batchSize: 16, maxSteps: 2 }));
  return t;
}

describe('safetensors checkpoints', () => {
  it('hold every parameter and running statistic with its PyTorch-style name, shape and values', async () => {
    const t = await trainedResnet();
    const file = path.join(tmp.dir, 'resnet.safetensors');
    t.save(file);
    const { tensors, metadata, headerLength } = readSafetensors(file);
    expect(headerLength % 8).toBe(0);
    const info = t.info();
    expect([...tensors.keys()].sort()).toEqual(info.parameters.map((p) => p.name).sort());
    expect(tensors.get('stem.conv.weight')?.shape).toEqual([24, 104, 3, 3]);
    expect(tensors.get('stages.3.0.bn3.running_var')?.shape).toEqual([576]);
    expect(tensors.get('policy_head.fc.weight')?.shape).toEqual([1496, 128]);

    // Trainable tensors, in table order, are exactly the flat parameter block.
    const params = t.params();
    let offset = 0;
    for (const p of info.parameters.filter((q) => q.trainable)) {
      const tensor = tensors.get(p.name);
      expect(tensor?.dtype).toBe('F32');
      const n = p.shape.reduce((a, b) => a * b, 1);
      expect(Buffer.from(tensor!.data.buffer).equals(Buffer.from(params.buffer, offset * 4, n * 4))).toBe(true);
      offset += n;
    }
    expect(offset).toBe(params.length);
    // Running statistics moved away from their initial values during training.
    expect(Array.from(tensors.get('stem.bn.running_mean')!.data).some((v) => v !== 0)).toBe(true);
    expect(metadata.format).toBe('pt');
    expect(JSON.parse(metadata.trainbench_spec)).toEqual(RESNET_SPEC);
  });

  it('load back into a fresh model: same parameters, same predictions', async () => {
    const t = await trainedResnet();
    const file = path.join(tmp.dir, 'roundtrip.safetensors');
    t.save(file);
    const fresh = new addon.Trainer(json(RESNET_SPEC), json({ seed: 99 }));
    fresh.setData('train', boardData(32, 3));
    expect(Buffer.from(fresh.params().buffer).equals(Buffer.from(t.params().buffer))).toBe(false);
    fresh.load(file);
    expect(Buffer.from(fresh.params().buffer).equals(Buffer.from(t.params().buffer))).toBe(true);
    const [a, b] = [await t.evaluate('train'), await fresh.evaluate('train')];
    expect(b.loss).toBe(a.loss);
  });

  it('refuse a truncated file, naming it', async () => {
    const t = await trainedResnet();
    const file = path.join(tmp.dir, 'cut.safetensors');
    t.save(file);
    const bytes = readFileSync(file);
    writeFileSync(file, bytes.subarray(0, bytes.length - 1000));
    const err = thrown(() => t.load(file));
    expect(err.code).toBe('E_DATA');
    expect(err.message).toContain('truncated or corrupt');
    expect(err.message).toContain(file);
  });

  it('refuse a header that claims more bytes than the file has', () => {
    const file = path.join(tmp.dir, 'liar.safetensors');
    const header = Buffer.alloc(8);
    header.writeBigUInt64LE(1_000_000n);
    writeFileSync(file, Buffer.concat([header, Buffer.from('{}')]));
    const err = thrown(() => new addon.Trainer(json(MLP_SPEC)).load(file));
    expect(err.code).toBe('E_DATA');
    expect(err.message).toContain('header length of 1000000 bytes');
  });

  it('refuse a checkpoint of another model, naming the tensor', async () => {
    const mlp = new addon.Trainer(json(MLP_SPEC));
    mlp.setData('train', blobs(16, 1));
    const file = path.join(tmp.dir, 'mlp.safetensors');
    mlp.save(file);
    const other = new addon.Trainer(json({ ...MLP_SPEC, hidden: [16, 9] }));
    const err = thrown(() => other.load(file));
    expect(err.code).toBe('E_DATA');
    expect(err.message).toMatch(/tensor 'layers\.1\.weight' has shape \[8,16\] but the model needs \[9,16\]/);
    const resnet = new addon.Trainer(json(RESNET_SPEC));
    expect(thrown(() => resnet.load(file)).message).toContain("has no tensor 'stem.conv.weight'");
  });

  it('refuse a file that is not a checkpoint', () => {
    const file = path.join(tmp.dir, 'junk.safetensors');
    const header = Buffer.alloc(8);
    header.writeBigUInt64LE(5n);
    writeFileSync(file, Buffer.concat([header, Buffer.from('{"a":')]));
    const err = thrown(() => new addon.Trainer(json(MLP_SPEC)).load(file));
    expect(err.code).toBe('E_DATA');
    expect(err.message).toContain('bad header');
  });
  it('is written through its own new temp file: a link planted in the folder cannot send it outside (issue 41 F3)', async () => {
    const t = await trainedResnet();
    const outside = tempDir();
    const victim = path.join(outside.dir, 'victim');
    writeFileSync(victim, 'ORIGINAL');
    const file = path.join(tmp.dir, 'planted.safetensors');
    // Where the temp file used to be written, by a name anyone who can write the folder could predict.
    symlinkSync(victim, `${file}.tmp`);
    t.save(file);
    expect(readFileSync(victim, 'utf8')).toBe('ORIGINAL');
    expect(lstatSync(file).isFile()).toBe(true);
    expect(readSafetensors(file).metadata.format).toBe('pt');
    // No temp file is left beside it.
    expect(readdirSync(tmp.dir).filter((f) => f.startsWith('planted.safetensors.') && f !== 'planted.safetensors.tmp')).toEqual([]);
    outside.cleanup();
  });
});
