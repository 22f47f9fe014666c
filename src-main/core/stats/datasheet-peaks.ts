/**
 * Dense (no sparsity) peak rates from the makers' datasheets, per precision, in TFLOP/s. A device is matched
 * by its name as nvidia-smi and the driver report it. Only what a datasheet states is here: a precision a
 * sheet does not give has no entry, and a CPU has none (its peak is the one measured on it).
 */
export type DatasheetPrecision = 'fp32' | 'tf32' | 'bf16' | 'fp16';

export interface DatasheetPeak {
  device: string;
  /** fp32: CUDA cores; tf32: tensor cores on fp32 tensors (TensorFloat-32); bf16/fp16: tensor cores with fp32 accumulation; all dense. */
  tflops: Partial<Record<DatasheetPrecision, number>>;
  source: string;
}

const H100_SHEET = 'NVIDIA H100 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h100), dense figures (the sheet gives sparse ones as 2x)';

export const DATASHEET_PEAKS: readonly (DatasheetPeak & { match: RegExp })[] = [
  { match: /H100.*(SXM|HBM3)/i, device: 'H100 SXM', tflops: { fp32: 67, tf32: 494.7, bf16: 989.4, fp16: 989.4 }, source: H100_SHEET },
  { match: /H100.*(PCIe|NVL)/i, device: 'H100 PCIe', tflops: { fp32: 51, tf32: 378, bf16: 756, fp16: 756 }, source: H100_SHEET },
  { match: /H200/i, device: 'H200 SXM', tflops: { fp32: 67, tf32: 494.7, bf16: 989.4, fp16: 989.4 }, source: 'NVIDIA H200 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h200), dense figures' },
  { match: /A100/i, device: 'A100', tflops: { fp32: 19.5, tf32: 156, bf16: 312, fp16: 312 }, source: 'NVIDIA A100 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/a100), dense figures' },
  { match: /L40S/i, device: 'L40S', tflops: { fp32: 91.6, tf32: 183, bf16: 362.05, fp16: 362.05 }, source: 'NVIDIA L40S datasheet (nvidia.com/en-us/data-center/l40s), dense figures' },
  { match: /RTX 4090/i, device: 'GeForce RTX 4090', tflops: { fp32: 82.6, tf32: 82.6, bf16: 165.2, fp16: 165.2 }, source: 'NVIDIA Ada Lovelace GPU architecture whitepaper, appendix table (TF32 tensor, FP16/BF16 tensor with FP32 accumulate, dense)' },
  { match: /RTX 3090/i, device: 'GeForce RTX 3090', tflops: { fp32: 35.6, tf32: 35.6, bf16: 71, fp16: 71 }, source: 'NVIDIA Ampere GA102 GPU architecture whitepaper, table 9 (TF32 tensor, FP16/BF16 tensor with FP32 accumulate, dense)' },
  { match: /RTX 3050/i, device: 'GeForce RTX 3050 (8 GB)', tflops: { fp32: 9.1 }, source: "NVIDIA's RTX 3050 specifications: 2,560 CUDA cores at 1.777 GHz boost x 2 FLOPs per FMA (no tensor-core figure is given)" },
];

/** The datasheet entry for a device name, or null (a CPU, or a GPU not in the table). */
export function datasheetPeak(deviceName: string): DatasheetPeak | null {
  const hit = DATASHEET_PEAKS.find((p) => p.match.test(deviceName));
  return hit ? { device: hit.device, tflops: hit.tflops, source: hit.source } : null;
}
