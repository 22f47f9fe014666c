import { z } from 'zod';

import { DevicesSchema, EngineVersionSchema, PingResultSchema } from './devices';
import { EngineStatusEventSchema } from './events';
import { ModelInfoSchema, ModelSpecSchema } from './model-spec';
import { TrainRequestSchema, TrainResultSchema } from './training';

const NoParams = z.object({}).strict();

/**
 * Every request of the contract: its params schema (validated by the receiver)
 * and its result schema (validated by the caller).
 */
export const apiMethods = {
  'engine.version': { params: NoParams, result: EngineVersionSchema },
  'engine.devices': { params: NoParams, result: DevicesSchema },
  'engine.ping': { params: NoParams, result: PingResultSchema },
  'engine.status': { params: NoParams, result: EngineStatusEventSchema },
  'model.info': { params: z.object({ spec: ModelSpecSchema }).strict(), result: ModelInfoSchema },
  /** Trains to completion; progress arrives as train.progress events with the same runId. */
  'train.run': { params: TrainRequestSchema, result: TrainResultSchema },
  'train.cancel': { params: z.object({ runId: z.string().min(1) }).strict(), result: z.object({ cancelled: z.boolean() }) },
} as const;

export type ApiMethods = typeof apiMethods;
export type MethodName = keyof ApiMethods;
export type MethodParams<M extends MethodName> = z.input<ApiMethods[M]['params']>;
export type MethodResult<M extends MethodName> = z.infer<ApiMethods[M]['result']>;

export const methodNames = Object.keys(apiMethods) as MethodName[];

export function isMethodName(name: string): name is MethodName {
  return Object.prototype.hasOwnProperty.call(apiMethods, name);
}
