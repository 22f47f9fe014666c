// vitest globalSetup: the test Pythons looked up once, before the workers start (test/helpers/pythons.ts).
import { findPythonsOnce } from './pythons';

export default function setup(): void {
  try {
    findPythonsOnce();
  } catch {
    // No python3 with torch: each script test file says so itself when it loads.
  }
}
