// The rules in force kept in the store (sql/migrations/021_ratio_rules.sql), so the SQL judge reads them beside the data.
import type { Store } from './db.ts';
import { insertRows } from './insert-rows.ts';
import type { RuleTables } from '../contract/rule-tables.ts';

const CONDITIONS = '::JSON::STRUCT(field VARCHAR, cmp VARCHAR, value DOUBLE)[]';

/** The hash of the rule set kept (null: none yet). */
export async function keptRulesHash(store: Pick<Store, 'all'>): Promise<string | null> {
  const [r] = await store.all<{ rules_hash: string }>('SELECT rules_hash FROM ratio_rule_set LIMIT 1');
  return r ? String(r.rules_hash) : null;
}

/** Replaces the kept rule set with t, in the caller's transaction. */
export async function writeRuleTables(s: Pick<Store, 'run'>, t: RuleTables): Promise<void> {
  for (const table of ['ratio_rules', 'ratio_rule_classes', 'ratio_rule_groups', 'ratio_rule_set', 'ratio_fees']) await s.run(`DELETE FROM ${table}`);
  const rows = t.rules.map((r) => [r.class, r.ord, r.id, r.network, r.program, r.level, r.rank, r.metric, r.comparison, r.threshold, JSON.stringify(r.conditions),
    r.months_to_enter, r.months_to_leave, r.from_month, r.to_month, r.early_warning, r.step_down, JSON.stringify(r.supersedes), r.certainty, r.certainty_note]);
  await insertRows(s, 'ratio_rules', rows, ['class', 'ord', 'id', 'network', 'program', 'level', 'rank', 'metric', 'comparison', 'threshold', 'conditions',
    'months_to_enter', 'months_to_leave', 'from_month', 'to_month', 'early_warning', 'step_down', 'supersedes', 'certainty', 'certainty_note'],
  { conditions: CONDITIONS, supersedes: '::JSON::VARCHAR[]' });
  await insertRows(s, 'ratio_rule_classes', t.classes.map((c) => [c.id, c.class, c.region, c.region_source]), ['id', 'class', 'region', 'region_source']);
  await insertRows(s, 'ratio_rule_groups', t.groups.map((g) => [g.group_id, g.mid, g.program]), ['group_id', 'mid', 'program']);
  await insertRows(s, 'ratio_fees', t.fees.map((f, ord) => [ord, f.network, f.program, f.level, f.per_event, f.currency, f.basis, f.from_month, f.to_month]),
    ['ord', 'network', 'program', 'level', 'per_event', 'currency', 'basis', 'from_month', 'to_month']);
  await s.run('INSERT INTO ratio_rule_set VALUES ($1, $2, $3, now()::TIMESTAMP)', [t.hash, t.defaultRegion, t.watchFraction]);
}
