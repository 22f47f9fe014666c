import { ApiError } from '../../api/errors';

/** A wizard's cancel, raised between repetitions; a repetition cancelled while it runs ends in the runner's own E_CANCELLED. */
export class WizardCancelled extends ApiError {
  constructor(message: string) {
    super('E_CANCELLED', message);
  }
}
