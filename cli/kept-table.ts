// Whether the kept ratio table (ratio_mart) holds what the rules configured now say of the data: current
// (store/ratio-mart.ts martFreshness) and written under these rules. `cbp ratios` and `cbp report` read it then.
import type { Store } from '../store/db.ts';
import type { RuleSet } from '../rules/thresholds.ts';
import { rulesHash } from '../alerts/engine.ts';
import { lastEvaluation } from '../store/alerts.ts';
import { martFreshness } from '../store/ratio-mart.ts';

/** Whether the kept table holds what these rules say of the data now; if not, why (and whether an evaluation ever ran). */
export interface KeptCheck {
  holds: boolean;
  /** why not, and what to run; null when it holds */
  behind: string | null;
  /** a rule evaluation has run on this store (it is behind, or ran under other rules) */
  evaluated: boolean;
}

/** Whether the kept table holds, and why not. */
export async function keptTableCheck(store: Pick<Store, 'all'>, rules: RuleSet): Promise<KeptCheck> {
  let fresh;
  try {
    fresh = await martFreshness(store);
  } catch {
    return { holds: false, behind: 'the kept ratio table could not be read: run `cbp alerts evaluate`', evaluated: false };
  }
  const last = await lastEvaluation(store).catch(() => null);
  if (!fresh.current) return { holds: false, behind: fresh.behind, evaluated: last !== null };
  if (!last || last.rulesHash !== rulesHash(rules)) {
    return { holds: false, behind: 'the last rule evaluation ran under other rules than those configured now: run `cbp alerts evaluate`', evaluated: last !== null };
  }
  return { holds: true, behind: null, evaluated: true };
}

