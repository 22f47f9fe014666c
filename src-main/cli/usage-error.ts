import { ApiError } from '../api/errors';

/**
 * Bad input the command line itself found (an option's value, a missing argument): the one kind of failure that ends
 * with a pointer to the command's --help. A data error (a file that cannot be read, a run without results) says
 * what is wrong with the data instead; the usage would not help (re-attacks 18, 19).
 */
export class UsageError extends ApiError {
  constructor(message: string) {
    super('E_BAD_INPUT', message);
  }
}
