// What a command that writes a source of the ratios does before it exits: the ratio table judged again where the data
// changed. A load also records the levels it shows as history (no one paged: the nightly pages what still stands); an
// import or a restore only brings the table to the rules in force, the store otherwise as it was.
import type { Store } from '../store/db.ts';
import type { Config } from '../lib/config.ts';

type RulesConfig = Pick<Config, 'thresholdsFile' | 'defaultRegion'>;

async function rulesOf(cfg: RulesConfig) {
  const { loadRules } = await import('../rules/thresholds.ts');
  return loadRules(cfg.thresholdsFile, { defaultRegion: cfg.defaultRegion });
}

export async function judgeAfterWrite(store: Store, cfg: RulesConfig, now = new Date()): Promise<void> {
  const { evaluateAfterLoad } = await import('../alerts/engine.ts');
  await evaluateAfterLoad(store, { asOf: now, rules: await rulesOf(cfg), notify: false, now });
}

export async function refreshAfterWrite(store: Store, cfg: RulesConfig): Promise<void> {
  const { refreshRatios } = await import('../alerts/refresh.ts');
  await refreshRatios(store, await rulesOf(cfg));
}
