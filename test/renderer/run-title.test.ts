// Issue 27 item 10: the Runs list names a run short (model on dataset, or the script from its file on); the full title stays in the run.
import { describe, expect, it } from 'vitest';

import { shortRunTitle } from '../../src-renderer/view-models/run-title';

describe('short run titles', () => {
  it('drops the kind and the record count of an engine run', () => {
    expect(shortRunTitle('training benchmark: mlp on fashion-mnist-train (60000 records)')).toBe('mlp on fashion-mnist-train');
    expect(shortRunTitle('optimisation: bottleneck_resnet on example-board-train (20000 records)')).toBe('bottleneck_resnet on example-board-train');
    expect(shortRunTitle('cnn on fashion-mnist-train (60000 records)')).toBe('cnn on fashion-mnist-train');
    expect(shortRunTitle('mlp on data')).toBe('mlp on data');
    expect(shortRunTitle('mlp on fashion-mnist-train (60000 records), test fashion-mnist-test (10000 records)')).toBe('mlp on fashion-mnist-train');
  });

  it('names a script run from its file or module on, paths cut to their last part, so runs that differ in an argument stay apart', () => {
    expect(shortRunTitle('training benchmark: script python3 test/fixtures/scripts/fashion_mnist_tutorial.py --data /tmp/x --epochs 1')).toBe(
      'fashion_mnist_tutorial.py --data x --epochs 1',
    );
    expect(shortRunTitle('optimisation: script torchrun --nproc-per-node 2 /home/me/proj/train.py --epochs 3')).toBe('train.py --epochs 3');
    expect(shortRunTitle('script python3 -m pkg.train --epochs 3')).toBe('pkg.train --epochs 3');
    expect(shortRunTitle('batch-size search: script ./run.sh')).toBe('run.sh');
    expect(shortRunTitle('script make train')).toBe('make train');
    // An address or a number is a value, not a file: the node's torchrun options are skipped up to the script.
    expect(shortRunTitle('training benchmark: script torchrun --nnodes 2 --master_addr 127.0.0.1 --master_port 29500 --lr 0.5 train.py --steps 40')).toBe('train.py --steps 40');
    // A title whose middle was cut keeps what is left of the file's name.
    expect(shortRunTitle('script python3 test/fixtures/scripts/fashion_mnist_tutor…y --data tb --epochs 1')).toBe('fashion_mnist_tutor…y --data tb --epochs 1');
  });

  it('cuts a long script name at 60 characters', () => {
    const t = shortRunTitle(`script python3 train.py ${'--flag value '.repeat(10)}`);
    expect(t).toHaveLength(60);
    expect(t.endsWith('…')).toBe(true);
  });

  it('leaves a kind it does not know as it is', () => {
    expect(shortRunTitle('loader benchmark of fashion-mnist-train')).toBe('loader benchmark of fashion-mnist-train');
  });
});
