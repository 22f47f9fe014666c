// vitest globalSetup: the test Pythons looked up once, before the workers start (test/helpers/pythons.ts).
import { findPythonsOnce } from './pythons';

export default function setup(): void {
  // Two test files run at once on two cores, and torch's OpenMP threads spin while they wait for work: with another
  // process on the cores, two cnn_tutorial runs at once took 19.5 s instead of 12.4 s on torch 2.13 (6.6 s instead of
  // 5.7 on 1.13). Every process the tests start inherits it; a value set outside is kept.
  process.env.OMP_WAIT_POLICY ??= 'PASSIVE';
  try {
    findPythonsOnce();
  } catch {
    // No python3 with torch: each script test file says so itself when it loads.
  }
}
