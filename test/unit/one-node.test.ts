// Issue 40: scaling efficiency launches a torchrun job of several nodes on this node alone. The command is made one
// of one node (--nnodes 1, --node_rank 0) in whichever spelling the user wrote, the rest as written; a command that is
// not a torchrun job of several nodes has nothing to compare.
import { describe, expect, it } from 'vitest';

import { oneNodeCommand } from '../../src-main/core/nodes/one-node';

describe('the job on this node alone', () => {
  it('sets --nnodes 1 and --node_rank 0, spaced or with =, through torchrun or python -m torch.distributed.run', () => {
    expect(oneNodeCommand(['/venv/bin/torchrun', '--nnodes', '2', '--node_rank', '1', '--master_addr', '10.0.0.1', 'train.py', '--nnodes', '9'])).toEqual({
      command: ['/venv/bin/torchrun', '--nnodes', '1', '--node_rank', '0', '--master_addr', '10.0.0.1', 'train.py', '--nnodes', '9'],
      nodes: 2,
    });
    expect(oneNodeCommand(['python3', '-m', 'torch.distributed.run', '--nnodes=4', '--node-rank=3', 'train.py'])).toEqual({
      command: ['python3', '-m', 'torch.distributed.run', '--nnodes=1', '--node-rank=0', 'train.py'],
      nodes: 4,
    });
    // An elastic range: the most nodes it may have.
    expect(oneNodeCommand(['torchrun', '--nnodes', '1:8', '--rdzv-backend', 'c10d', 'train.py'])?.nodes).toBe(8);
  });

  it('is null for one node, no --nnodes, or no torchrun', () => {
    expect(oneNodeCommand(['torchrun', '--nnodes', '1', 'train.py'])).toBeNull();
    expect(oneNodeCommand(['torchrun', '--nproc_per_node', '8', 'train.py'])).toBeNull();
    expect(oneNodeCommand(['python3', 'train.py', '--nnodes', '2'])).toBeNull();
    expect(oneNodeCommand(['torchrun', '--nnodes', 'two', 'train.py'])).toBeNull();
  });
});
