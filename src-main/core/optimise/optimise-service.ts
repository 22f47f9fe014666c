import { ApiError } from '../../api/errors';
import type { OptimiseRequest, OptimiseResult, WizardState } from '../../api/optimise';
import type { Workspace } from '../workspace';
import { loadWizardState } from './wizard-state';

/** The optimisation wizard (issue 12): registered first so the contract can be used; the trials land in the next commit. */
export class OptimiseService {
  private readonly active = new Map<string, { cancelled: boolean }>();

  constructor(private readonly workspace: Workspace) {}

  start(request: OptimiseRequest): Promise<OptimiseResult> {
    return Promise.reject(new ApiError('E_INTERNAL', `optimise.start (${request.target.spec.family}): the wizard's trials are not built yet on this branch`));
  }

  resume(optimiseId: string): Promise<OptimiseResult> {
    return Promise.reject(new ApiError('E_INTERNAL', `optimise.resume ${optimiseId}: the wizard's trials are not built yet on this branch`));
  }

  cancel(optimiseId: string): Promise<{ cancelled: boolean }> {
    const job = this.active.get(optimiseId);
    if (job) job.cancelled = true;
    return Promise.resolve({ cancelled: job !== undefined });
  }

  state(optimiseId: string): Promise<WizardState> {
    return loadWizardState(this.workspace, optimiseId);
  }
}
