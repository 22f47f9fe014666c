// Scaling efficiency (issue 40): the same job on this node alone. A torchrun command of several nodes is made a job
// of one (--nnodes 1, --node_rank 0); everything else, the script's arguments included, stays as the user wrote it.
import path from 'node:path';

const NNODES = ['--nnodes'];
const NODE_RANK = ['--node_rank', '--node-rank'];

/** Where torchrun's own options start: after `torchrun` or `python -m torch.distributed.run`; -1 where neither is. */
function torchrunAt(command: readonly string[]): number {
  for (let i = 0; i < command.length; i++) {
    if (path.basename(command[i]) === 'torchrun') return i + 1;
    if (command[i] === '-m' && command[i + 1] === 'torch.distributed.run') return i + 2;
  }
  return -1;
}

/** The option's value and where it is (`--opt V` or `--opt=V`), the first occurrence after `from`; null where absent. */
function optionAt(command: readonly string[], from: number, names: readonly string[]): { at: number; inline: boolean; value: string } | null {
  for (let i = from; i < command.length; i++) {
    const a = command[i];
    for (const n of names) {
      if (a === n && i + 1 < command.length) return { at: i, inline: false, value: command[i + 1] };
      if (a.startsWith(`${n}=`)) return { at: i, inline: true, value: a.slice(n.length + 1) };
    }
  }
  return null;
}

/**
 * The command as a job of this node alone, and how many nodes the job has (`--nnodes 2`, or the most of `1:4`);
 * null where it is not a torchrun command of more than one node.
 */
export function oneNodeCommand(command: readonly string[]): { command: string[]; nodes: number } | null {
  const from = torchrunAt(command);
  if (from < 0) return null;
  const nnodes = optionAt(command, from, NNODES);
  if (!nnodes) return null;
  const nodes = Number(nnodes.value.split(':').at(-1));
  if (!Number.isInteger(nodes) || nodes < 2) return null;
  const out = [...command];
  const set = (o: { at: number; inline: boolean }, name: string, value: string) => {
    if (o.inline) out[o.at] = `${name}=${value}`;
    else out[o.at + 1] = value;
  };
  set(nnodes, '--nnodes', '1');
  const rank = optionAt(command, from, NODE_RANK);
  if (rank) set(rank, command[rank.at].split('=')[0], '0');
  return { command: out, nodes };
}
