// The ratio table brought up to date under a rule set: the rules as tables (rules/rule-table.ts), then the judge
// (store/ratio-refresh.ts).
import type { Store } from '../store/db.ts';
import { refreshRatioTable, type RatioRefresh } from '../store/ratio-refresh.ts';
import { ruleTables } from '../rules/rule-table.ts';
import type { RuleSet } from '../rules/thresholds.ts';

export type { RatioRefresh } from '../store/ratio-refresh.ts';

export function refreshRatios(store: Store, rules: RuleSet, opts: { full?: boolean; inputRows?: number } = {}): Promise<RatioRefresh> {
  return refreshRatioTable(store, ruleTables(rules), opts);
}
