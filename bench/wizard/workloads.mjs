// The workloads bench:wizard measures (bench/workloads/), and how long each launch runs at each size:
// the plain script, the wizard's launches and the expert's all measure the same steps, so their
// samples/s compare. Full sizes give the plain script's measured steps about a second or more on
// an H100-class GPU (ADR 0035's window); tiny ones a fraction of a second on 2 CPU cores.

/** One workload: its script, what it is, the Python modules it imports, its steps per size. */
export const WORKLOADS = [
  {
    name: 'resnet',
    file: 'bench/workloads/resnet_cifar.py',
    what: 'ResNet-18, 32x32 synthetic images, per-image augmentation in the DataLoader, SGD',
    modules: ['torch'],
    steps: { tiny: { warmup: 3, steps: 8 }, full: { warmup: 20, steps: 150 } },
  },
  {
    name: 'bert',
    file: 'bench/workloads/bert_trainer.py',
    what: 'BERT-base sequence classifier through the Hugging Face Trainer, tokenizer trained locally',
    modules: ['torch', 'transformers', 'tokenizers', 'accelerate'],
    steps: { tiny: { warmup: 3, steps: 10 }, full: { warmup: 10, steps: 60 } },
  },
  {
    name: 'gpt2',
    file: 'bench/workloads/gpt2_lm.py',
    what: 'GPT-2-small LM, hand-written loop, gradient accumulation 4, AdamW',
    modules: ['torch'],
    steps: { tiny: { warmup: 3, steps: 6 }, full: { warmup: 3, steps: 8 } },
  },
];

/**
 * The protocol per size: the wizard's launches per side (5 is the fewest whose interval may keep or
 * reject a change), the changes it may try, the comparison's interleaved rounds, a launch's time limit.
 * Tiny is sized for CI on 2 cores: one change per wizard (the first its diagnosis orders).
 */
export const PROTOCOL = {
  tiny: { repeat: 5, maxTrials: 1, rounds: 3, timeoutS: 300 },
  full: { repeat: 5, maxTrials: 3, rounds: 5, timeoutS: 900 },
};

/** The rows of each workload, in the table's order: the wizard's two presets between plain and expert. */
export const VARIANTS = [
  { id: 'plain', label: 'plain script' },
  { id: 'wizard-balanced', label: 'wizard, balanced', preset: 'balanced' },
  { id: 'wizard-max-speed', label: 'wizard, max-speed', preset: 'max-speed' },
  { id: 'expert', label: "expert's version", scriptArgs: ['--expert'] },
];

/** Environment every launch gets: nothing from the network, quiet tokenizers. */
export const LAUNCH_ENV = { HF_HUB_OFFLINE: '1', TRANSFORMERS_OFFLINE: '1', HF_DATASETS_OFFLINE: '1', TOKENIZERS_PARALLELISM: 'false' };
