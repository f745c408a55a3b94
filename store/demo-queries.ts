// The result tables `cbp demo` prints at its end (cli/commands/demo.ts): read from the store it just filled.
import type { Store } from './db.ts';

type ReadStore = Pick<Store, 'all'>;

/**
 * The count ratios of month for the monitoring programs (VAMP, ECP, EFM, Discover's and Amex's excessive
 * chargebacks), actual months only, highest first, each with the levels reached (highest rank first, joined by ",").
 */
export async function programRatiosOf(store: ReadStore, month: string): Promise<Array<Record<string, unknown>>> {
  return store.all<Record<string, unknown>>(
    `SELECT r.mid, r.network, r.program, r.month, r.numerator::BIGINT AS numerator, r.denominator::BIGINT AS denominator,
            round(r.ratio_pct, 2) AS ratio_pct,
            (SELECT string_agg(s.level, ',' ORDER BY s.rank DESC) FROM alert_states s
              WHERE s.mid = r.mid AND s.network = r.network AND s.program = r.program AND s.month = r.month AND s.status = 'reached') AS level
       FROM mart_ratios r
      WHERE r.month = $m AND r.metric = 'count' AND NOT r.is_projection
        AND r.program IN ('vamp', 'ecp', 'efm', 'discover_excessive', 'amex_excessive')
      ORDER BY r.ratio DESC NULLS LAST, r.mid, r.network`,
    { m: month },
  );
}

/** At most limit ratio notices that are not projections, newest months first (due notices: store/due.ts). */
export async function latestNotices(store: ReadStore, limit: number): Promise<Array<Record<string, unknown>>> {
  return store.all<Record<string, unknown>>(
    `SELECT kind, mid, network, program, level, month, round(ratio_pct, 2) AS ratio_pct, notify
       FROM alerts WHERE NOT is_projection AND kind <> 'due' ORDER BY month DESC, mid, network, program LIMIT $lim`,
    { lim: limit },
  );
}
