// Whether the kept ratio table (ratio_mart) holds what the rules configured now say of the data, and bringing it there
// before a read: `cbp ratios`, `cbp report` and `cbp export` never silently read a table judged by other rules or data.
import { existsSync } from 'node:fs';
import type { Store } from '../store/db.ts';
import type { RuleSet } from '../rules/thresholds.ts';
import { rulesHash } from '../rules/rule-table.ts';
import { keptRulesHash } from '../store/ratio-rules.ts';
import { martFreshness, MART_CATCH_UP } from '../store/ratio-mart.ts';
import type { Config } from '../lib/config.ts';

/** Whether the kept table holds what these rules say of the data now; if not, why. */
export interface KeptCheck {
  holds: boolean;
  /** why not, and what to run; null when it holds */
  behind: string | null;
}

/** Whether the kept table holds, and why not; `judgedHere`: this store was judged under these rules a moment ago. */
export async function keptTableCheck(store: Pick<Store, 'all'>, rules: RuleSet, judgedHere = false): Promise<KeptCheck> {
  if (judgedHere) return { holds: true, behind: null };
  const fresh = await martFreshness(store).catch(() => null);
  if (!fresh) return { holds: false, behind: `the ratio table could not be read: run \`${MART_CATCH_UP}\`` };
  if (!fresh.current) return { holds: false, behind: fresh.behind };
  const kept = await keptRulesHash(store).catch(() => null);
  if (kept !== rulesHash(rules)) return { holds: false, behind: `the ratio table was judged by other rules (or another cbp) than those configured now: run \`${MART_CATCH_UP}\`` };
  return { holds: true, behind: null };
}

/**
 * Judges the store's ratio table again where the data or the rules changed, and publishes the snapshot readers read
 * (also one of another version: a killed run's, another store's), before a read. Does nothing when another process
 * holds the store (a worker keeps it current) or an explicit snapshot is read; the read then says whether the table is
 * behind. On a lake, with `keep`, the store it judged in is returned open for the read (one open of the lake, not two).
 */
export async function refreshBeforeReading(cfg: Pick<Config, 'dbPath' | 'snapshotPath' | 'storeMemoryLimit' | 'store' | 'lakeDataPath' | 'lakeExtensionsDir' | 'lakeStatementTimeout'>, rules: RuleSet, snapshot?: string, keep = false): Promise<Store | undefined> {
  if (snapshot !== undefined) return undefined;
  const { openStore } = await import('../store/db.ts');
  const { configuredStore } = await import('../store/lake.ts');
  const opts = configuredStore(cfg);
  if (!opts.lake && !existsSync(cfg.dbPath)) return undefined;
  let store: Store;
  try {
    store = await openStore({ ...opts, lockWaitMs: 0 });
  } catch {
    return undefined;
  }
  try {
    const { refreshRatios } = await import('../alerts/refresh.ts');
    const r = await refreshRatios(store, rules);
    if (cfg.snapshotPath && !store.lake && (r.fromMonth !== undefined || existsSync(cfg.snapshotPath))) {
      const { publishIfBehind } = await import('../store/snapshot.ts');
      await publishIfBehind(store, { snapshotPath: cfg.snapshotPath });
    }
    if (keep && store.lake) return store;
  } catch (e) {
    store.close();
    throw e;
  }
  store.close();
  return undefined;
}
