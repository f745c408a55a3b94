// The currency of a MID's amounts. The MID report (the ratios' transaction and chargeback amounts) names no
// currency; the chargeback report names one per chargeback (ISO 4217, upper case). A MID's currency is the
// one its chargebacks carry: one code, or several (mixed), or none known (no chargeback of it names one).
import type { Store } from './db.ts';

export interface MidCurrency {
  mid: string;
  /** the distinct codes its chargebacks carry, sorted */
  currencies: string[];
}

/** Per MID with a chargeback that names a currency: the codes, sorted. MIDs with none are absent. */
export async function midCurrencies(store: Pick<Store, 'all'>, q: { mid?: string } = {}): Promise<Map<string, string[]>> {
  const rows = await store.all<{ mid: string; currencies: string[] }>(
    `SELECT mid, list_sort(list(DISTINCT currency)) AS currencies FROM chargebacks
      WHERE currency IS NOT NULL ${q.mid !== undefined ? 'AND mid = $mid' : ''} GROUP BY mid`,
    q.mid !== undefined ? { mid: q.mid } : undefined,
  );
  return new Map(rows.map((r) => [String(r.mid), (r.currencies ?? []).map(String)]));
}
