// The ratio table brought up to date under a rule set: the rules as tables (rules/rule-table.ts), then the judge
// (store/ratio-refresh.ts), then the chances of a breach (alerts/forecast.ts).
import type { Store } from '../store/db.ts';
import { refreshRatioTable, type RatioRefresh } from '../store/ratio-refresh.ts';
import { ruleTables } from '../rules/rule-table.ts';
import type { RuleSet } from '../rules/thresholds.ts';
import { refreshForecasts } from './forecast.ts';

/** The ratio table, then the open months' chances of a breach when the table was written (alerts/forecast.ts). */
export async function refreshRatios(store: Store, rules: RuleSet, opts: { full?: boolean; judgedRows?: number } = {}): Promise<RatioRefresh> {
  const r = await refreshRatioTable(store, ruleTables(rules), opts);
  await refreshForecasts(store, rules, new Date(), r.fromMonth && r.replaced && r.written ? { from: r.fromMonth, replaced: r.replaced, written: r.written } : undefined);
  return r;
}
