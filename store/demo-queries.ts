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

/** The rows at a level or in watch in a month, with their headroom and fee columns (the demo's closing words). */
export async function atRiskHeadroomOf(store: ReadStore, month: string): Promise<Array<Record<string, unknown>>> {
  return store.all<Record<string, unknown>>(
    `SELECT mid, network, program, month, state, level, next_level, is_partial, is_projection, headroom_count, over_by_count, headroom_basis,
            fee_estimate, fee_currency, fee_basis
       FROM mart_ratios
      WHERE month = $m AND metric = 'count' AND NOT is_projection AND state IN ('level', 'watch')
      ORDER BY state, closeness DESC NULLS LAST, mid, network, program`,
    { m: month },
  );
}
