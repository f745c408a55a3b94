// What every command that writes a source of the ratios does before it exits: the ratio table judged again where the
// data changed, levels recorded as history (no one paged: the nightly pages what still stands).
import type { Store } from '../store/db.ts';
import type { Config } from '../lib/config.ts';

export async function judgeAfterWrite(store: Store, cfg: Pick<Config, 'thresholdsFile' | 'defaultRegion'>, now = new Date()): Promise<void> {
  const [{ loadRules }, { evaluateAfterLoad }] = await Promise.all([import('../rules/thresholds.ts'), import('../alerts/engine.ts')]);
  const rules = loadRules(cfg.thresholdsFile, { defaultRegion: cfg.defaultRegion });
  await evaluateAfterLoad(store, { asOf: now, rules, notify: false, now });
}
