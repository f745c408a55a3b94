// The Python 3 the install scripts make their virtualenvs with (temporal:install, lake:install,
// analyst-tools:install): the first of python3, python that runs; undefined when none does.
import { execFileSync } from 'node:child_process';

export function findPython() {
  return ['python3', 'python'].find((p) => {
    try { execFileSync(p, ['--version'], { stdio: 'ignore' }); return true; } catch { return false; }
  });
}
