// The rules in force as the SQL judge reads them (sql/migrations/021_ratio_rules.sql): one row per rule of each
// rules class, the classes of MIDs and groups with an entry of their own, the groups' members, and the fees.
import { createHash } from 'node:crypto';
import path from 'node:path';
import { PACKAGE_ROOT } from '../lib/package-root.ts';
import { readViews } from '../lib/sql-views.ts';
import { regionInfo, rulesFor } from './rule-set.ts';
import { watchOf, type RuleSet } from './thresholds.ts';
import type { RuleRow, ClassRow, RuleTables } from '../contract/rule-tables.ts';

export type { RuleTables } from '../contract/rule-tables.ts';

const fromMonth = (d: string | null) => (d ? d.slice(0, 7) : '0000-00');
const toMonth = (d: string | null) => (d ? d.slice(0, 7) : '9999-99');

/** The SQL that computes and judges the ratios (sql/views/10_stg_events.sql, 40 to 46) of these view files, but its comment lines. */
export const judgeSqlOf = (views: Array<{ file: string; sql: string }>) =>
  views.filter((v) => /^(10|4\d)_/.test(v.file)).map((v) => v.sql.replace(/^\s*--.*$/gm, '')).join('\n');
const judgeSql = judgeSqlOf(readViews(path.join(PACKAGE_ROOT, 'sql', 'views')));

/** A rule set's identity with the judge's SQL: another means every month is judged again (the chances judge nothing). */
export function rulesHash(set: RuleSet): string {
  const { forecast: _warnings, ...judged } = set;
  return createHash('sha256').update(JSON.stringify(judged)).update(judgeSql).digest('hex').slice(0, 32);
}

/** The rule set as tables: class '' for every MID without an entry of its own, 'mid:<id>' for a MID's or a group's. */
export function ruleTables(set: RuleSet): RuleTables {
  const rules: RuleRow[] = [];
  const classes: ClassRow[] = [];
  const add = (cls: string, id: string) => {
    rulesFor(cls === '' ? { ...set, mids: {}, groups: {} } : set, id).forEach((r, ord) => rules.push({
      class: cls, ord, id: r.id, network: r.network, program: r.program, level: r.level, rank: r.rank, metric: r.metric,
      comparison: r.comparison, threshold: r.ratio_threshold, conditions: r.conditions.map((c) => ({ field: c.field, cmp: c.comparison, value: c.value })),
      months_to_enter: r.months_to_enter, months_to_leave: r.months_to_leave, from_month: fromMonth(r.effective_from), to_month: toMonth(r.effective_to),
      early_warning: r.early_warning, step_down: r.step_down_at_once, supersedes: r.supersedes, certainty: r.certainty, certainty_note: r.certainty_note ?? null,
    }));
    if (cls !== '') {
      const { region, source } = regionInfo(set, id);
      classes.push({ id, class: cls, region, region_source: source });
    }
  };
  add('', '\u0000');
  for (const id of new Set([...Object.keys(set.mids), ...Object.keys(set.groups ?? {})])) add(`mid:${id}`, id);
  const groups = Object.entries(set.groups ?? {}).flatMap(([group_id, g]) => g.mids.flatMap((mid) => g.programs.map((program) => ({ group_id, mid, program }))));
  const fees = (set.fees ?? []).filter((f) => f.enabled).map((f) => ({
    network: f.network, program: f.program, level: f.level, per_event: f.per_event, currency: f.currency, basis: f.basis,
    from_month: fromMonth(f.effective_from), to_month: toMonth(f.effective_to),
  }));
  return { rules, classes, groups, fees, hash: rulesHash(set), defaultRegion: set.defaultRegion, watchFraction: watchOf(set).fraction };
}
