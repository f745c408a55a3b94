// The rules in force as tables (sql/migrations/021_ratio_rules.sql): what rules/rule-table.ts makes of a rule set and
// store/ratio-rules.ts keeps.

export interface RuleRow {
  class: string; ord: number; id: string; network: string; program: string; level: string; rank: number; metric: string;
  comparison: string; threshold: number; conditions: Array<{ field: string; cmp: string; value: number }>;
  months_to_enter: number; months_to_leave: number; from_month: string; to_month: string;
  early_warning: boolean; step_down: boolean; supersedes: string[]; certainty: string; certainty_note: string | null;
}
export interface ClassRow { id: string; class: string; region: string; region_source: string }
export interface GroupRow { group_id: string; mid: string; program: string }
export interface FeeRow { network: string; program: string; level: string; per_event: number; currency: string; basis: string; from_month: string; to_month: string }

export interface RuleTables { rules: RuleRow[]; classes: ClassRow[]; groups: GroupRow[]; fees: FeeRow[]; hash: string; defaultRegion: string; watchFraction: number }
