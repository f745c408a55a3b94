// The thresholds file: card network monitoring programs as data. Every figure of the reference table
// (docs/reference/card-network-programs.md) lives in rules/defaults.json; a file named by CBP_THRESHOLDS_FILE adds rules,
// replaces rules by id, disables rules, and sets per-MID regions and extra (e.g. internal early-warning) rules.
import { readFileSync, existsSync } from 'node:fs';
import { parseYaml } from '../lib/yaml.ts';
import { z } from 'zod';
import { NETWORKS } from '../contract/common.ts';
import { CERTAINTIES, FEE_BASES, METRICS, PROGRAMS, type WatchSettings } from '../contract/ratios.ts';
import { BUILT_IN_DEFAULT_REGION, REGIONS } from '../contract/regions.ts';
import { ConfigError } from '../lib/errors.ts';
import type { Program } from '../contract/ratios.ts';
import { parseOrThrow } from '../lib/validate.ts';
import defaultsJson from './defaults.json' with { type: 'json' };

export { PROGRAMS, METRICS, type Program, type Metric } from '../contract/ratios.ts';

export const ProgramSchema = z.enum(PROGRAMS, { error: (i) => `expected a program (${PROGRAMS.join(', ')}), got ${JSON.stringify(i.input)}` });
export const MetricSchema = z.enum(METRICS, { error: () => 'expected count or amount' });

export const ComparisonSchema = z.enum(['>=', '>'], { error: () => 'expected ">=" or ">"' });
export type Comparison = z.infer<typeof ComparisonSchema>;

/** Fields of a ratio row a condition may test. month_transaction_count/amount: the transactions of M, the chargebacks'
 * month, whatever month the denominator is (Discover's "100 net sales" is of M; its denominator is M−1's). */
export const CONDITION_FIELDS = ['numerator_count', 'numerator_amount', 'denominator_count', 'denominator_amount', 'month_transaction_count', 'month_transaction_amount'] as const;
export type ConditionField = (typeof CONDITION_FIELDS)[number];

const day = z.string().regex(/^\d{4}-\d{2}-\d{2}$/, 'expected a date YYYY-MM-DD');
const network = z.enum(NETWORKS, { error: () => `expected a network (${NETWORKS.join(', ')})` });
/** A rule's or a fee's effective dates in order. */
const effectiveInOrder = (x: { effective_from: string | null; effective_to: string | null }) => !x.effective_from || !x.effective_to || x.effective_from <= x.effective_to;
const EFFECTIVE_ORDER = { message: 'expected effective_to on or after effective_from', path: ['effective_to'] };

export const ConditionSchema = z.strictObject({
  field: z.enum(CONDITION_FIELDS, { error: () => `expected one of ${CONDITION_FIELDS.join(', ')}` }),
  comparison: ComparisonSchema.default('>='),
  value: z.number({ error: 'expected a number' }).nonnegative('expected a number ≥ 0'),
});
export type Condition = z.infer<typeof ConditionSchema>;

export const RuleSchema = z
  .strictObject({
    /** Stable id; a thresholds file replaces a default rule by giving the same id. */
    id: z.string().min(1, 'expected a rule id'),
    network,
    program: ProgramSchema,
    level: z.string().min(1, 'expected a level name'),
    /** Escalation order inside one network × program: a higher rank is the more severe level. */
    rank: z.number().int('expected a whole number'),
    metric: MetricSchema.default('count'),
    comparison: ComparisonSchema,
    /** A fraction: 0.015 is 1.5 %. */
    ratio_threshold: z.number({ error: 'expected a fraction such as 0.015 for 1.5 %' }).min(0).max(10),
    conditions: z.array(ConditionSchema).default([]),
    months_to_enter: z.number().int().min(1, 'expected 1 or more').default(1),
    months_to_leave: z.number().int().min(1, 'expected 1 or more').default(1),
    effective_from: day.nullable().default(null),
    effective_to: day.nullable().default(null),
    /** Visa regions the rule applies to; null: every region. */
    regions: z.array(z.string().min(1)).nullable().default(null),
    /** Regions (markets) left out though `regions` takes them in (EFM's global rule leaves out AU, which has its own). */
    except_regions: z.array(z.string().min(1)).default([]),
    enabled: z.boolean().default(true),
    early_warning: z.boolean().default(false),
    /** A month meeting a lower level of the program but not this one ends this one that month (Mastercard HECM → ECM);
     * months_to_leave counts only months that meet no lower level either. */
    step_down_at_once: z.boolean().default(false),
    /** Programs of the same network this level is assessed instead of, in a month both are met (EFM over ECP). */
    supersedes: z.array(ProgramSchema).default([]),
    /** How far the service's data lets the rule be judged (contract/ratios.ts Certainty); the note says why. */
    certainty: z.enum(CERTAINTIES, { error: () => `expected one of ${CERTAINTIES.join(', ')}` }).default('exact'),
    certainty_note: z.string().optional(),
    note: z.string().optional(),
  })
  .refine(effectiveInOrder, EFFECTIVE_ORDER);
export type Rule = z.infer<typeof RuleSchema>;

/** A program fee: what a network charges a MID at a level, per counted event or per event above the threshold. Estimates;
 * where sources disagree each reading is a fee of its own id, and enable / disable choose (two in force are refused). */
export const FeeSchema = z
  .strictObject({
    id: z.string().min(1, 'expected a fee id'),
    network,
    program: ProgramSchema,
    level: z.string().min(1, 'expected a level name'),
    per_event: z.number({ error: 'expected an amount per event' }).nonnegative('expected an amount ≥ 0'),
    currency: z.string().regex(/^[A-Z]{3}$/, 'expected an ISO 4217 currency code such as USD'),
    basis: z.enum(FEE_BASES, { error: () => `expected one of ${FEE_BASES.join(', ')}` }),
    effective_from: day.nullable().default(null),
    effective_to: day.nullable().default(null),
    enabled: z.boolean().default(true),
    source: z.string().min(1, 'expected a source note: where the figure was published'),
  })
  .refine(effectiveInOrder, EFFECTIVE_ORDER);
export type Fee = z.infer<typeof FeeSchema>;

/** A program the rules know of and do not judge, and why (VAMP enumeration needs authorization data). */
export const NotModelledSchema = z.strictObject({ network: z.enum(NETWORKS), program: z.string().min(1), reason: z.string().min(1) });

export const MidOverrideSchema = z.strictObject({
  region: z.string().min(1).optional(),
  /** Extra rules for this MID only (e.g. a tighter internal early-warning level). */
  rules: z.array(RuleSchema).default([]),
  /** Rule ids switched off for this MID. */
  disable: z.array(z.string()).default([]),
});

export const WatchSchema = z.strictObject({
  /** Every condition of every level scaled by this fraction gives the level's watch band. */
  fraction: z.number({ error: 'expected a fraction such as 0.8' }).gt(0, 'expected a fraction above 0').max(1, 'expected a fraction of at most 1').default(0.8),
  /** A `watch` notice once per mid × network × program × month entering the band. */
  notify: z.boolean().default(false),
});

const Chance = z.number({ error: 'expected a chance such as 0.5' }).gt(0, 'expected a chance above 0').max(1, 'expected a chance of at most 1');

export const ForecastSchema = z.strictObject({
  /** A level's early warning (a `likely` notice) once its chance of being met this month reaches this, once a month. */
  warn_at: Chance.default(0.5),
  /** Per level ("network.program.level", e.g. "mastercard.ecp.ecm"), its own warn_at. */
  levels: z.record(z.string(), Chance).default({}),
  /** false: the warnings are not sent (the chances are still shown). */
  notify: z.boolean().default(true),
});
export type ForecastSettings = z.infer<typeof ForecastSchema>;

/** A merchant of several MIDs (Visa may combine MIDs): the programs listed (default VAMP) are judged on the group's
 * summed numerators and denominators. */
export const GroupSchema = z.strictObject({
  mids: z.array(z.string().min(1)).min(1, 'expected at least one MID'),
  programs: z.array(ProgramSchema).default(['vamp']),
  /** The group's region (default: the region of its MIDs, which must then agree, else default_region). */
  region: z.string().min(1).optional(),
  note: z.string().optional(),
});

export const ThresholdsFileSchema = z.strictObject({
  version: z.literal(1, { error: () => 'expected 1' }).default(1),
  /** false: the file's rules are the whole set; true (default): they are added to the reference defaults. */
  extends_defaults: z.boolean().default(true),
  default_region: z.string().min(1).default('US'),
  rules: z.array(RuleSchema).default([]),
  /** Program fees per level (a fee of a default's id replaces it). */
  fees: z.array(FeeSchema).default([]),
  /** Programs known and not judged, with the reason (docs/ratios.md "Not modelled"). */
  not_modelled: z.array(NotModelledSchema).default([]),
  /** Rule or fee ids switched off (e.g. a retired program, a fee reading not chosen). */
  disable: z.array(z.string()).default([]),
  /** Rule or fee ids switched on (e.g. the legacy Mastercard early warning, another fee reading). */
  enable: z.array(z.string()).default([]),
  mids: z.record(z.string(), MidOverrideSchema).default({}),
  watch: WatchSchema.default({ fraction: 0.8, notify: false }),
  /** the chance of a breach: when its early warning is sent */
  forecast: ForecastSchema.default({ warn_at: 0.5, levels: {}, notify: true }),
  /** group id → the MIDs monitored as one merchant */
  groups: z.record(z.string().min(1), GroupSchema).default({}),
});
export type ThresholdsFile = z.infer<typeof ThresholdsFileSchema>;

/** The resolved rule set evaluation uses. */
export interface RuleSet {
  defaultRegion: string;
  rules: Rule[];
  mids: Record<string, { region?: string; rules: Rule[]; disable: string[] }>;
  /** the watch band; absent: fraction 0.8, no notices */
  watch?: WatchSettings;
  /** group id → its MIDs and the programs judged on the group; absent: none */
  groups?: Record<string, { mids: string[]; programs: Program[]; region?: string }>;
  /** program fees (enabled or not); absent: none */
  fees?: Fee[];
  /** programs known and not judged */
  notModelled?: Array<{ network: string; program: string; reason: string }>;
  /** the early warning's chances; absent: 50 % for every level */
  forecast?: ForecastSettings;
}

/** The chance at which a level's early warning is sent. */
export function warnAt(set: RuleSet, l: { network: string; program: string; level: string }): number {
  const f = set.forecast;
  return f?.levels[`${l.network}.${l.program}.${l.level}`] ?? f?.warn_at ?? 0.5;
}

/** The watch settings of a rule set (defaults when it has none). */
export function watchOf(set: RuleSet): WatchSettings {
  return set.watch ?? { fraction: 0.8, notify: false };
}

export function defaultThresholds(): ThresholdsFile {
  return parseOrThrow(ThresholdsFileSchema, defaultsJson, 'rules/defaults.json');
}

/** Merges a parsed thresholds file over the defaults: same id replaces, then disable / enable apply. */
export function resolveRules(file: ThresholdsFile): RuleSet {
  const base = file.extends_defaults ? defaultThresholds() : undefined;
  const byId = new Map<string, Rule>();
  for (const r of base?.rules ?? []) byId.set(r.id, r);
  for (const r of file.rules) byId.set(r.id, r);
  const fees = new Map<string, Fee>();
  for (const f of [...(base?.fees ?? []), ...file.fees]) fees.set(f.id, f);
  const toggle = (id: string, enabled: boolean, list: string) => {
    const r = byId.get(id);
    const f = fees.get(id);
    if (!r && !f) throw new ConfigError([`thresholds: ${list} names an unknown rule or fee id "${id}"`]);
    if (r) byId.set(id, { ...r, enabled });
    if (f) fees.set(id, { ...f, enabled });
  };
  for (const id of [...(base?.disable ?? []), ...file.disable]) toggle(id, false, 'disable');
  for (const id of [...(base?.enable ?? []), ...file.enable]) toggle(id, true, 'enable');
  feeClashes([...fees.values()]);
  const seen = new Map<string, string>();
  for (const [id, g] of Object.entries(file.groups)) {
    for (const mid of g.mids) {
      const other = seen.get(mid);
      if (other !== undefined && other !== id) throw new ConfigError([`thresholds: MID "${mid}" is in two groups, "${other}" and "${id}"; a MID is monitored as one merchant`]);
      seen.set(mid, id);
    }
  }
  const groups = Object.fromEntries(Object.entries(file.groups).map(([id, g]) => [id, { mids: [...new Set(g.mids)], programs: g.programs, ...(g.region ? { region: g.region } : {}) }]));
  const notModelled = [...(base?.not_modelled ?? []), ...file.not_modelled];
  const levels = new Set([...byId.values(), ...Object.values(file.mids).flatMap((m) => m.rules)].map((r) => `${r.network}.${r.program}.${r.level}`));
  const unknown = Object.keys(file.forecast.levels).filter((k) => !levels.has(k));
  if (unknown.length) throw new ConfigError(unknown.map((k) => `thresholds: forecast.levels names "${k}", no level of the rules; expected network.program.level, e.g. "mastercard.ecp.ecm"`));
  return { defaultRegion: file.default_region, rules: [...byId.values()], mids: file.mids, watch: file.watch, groups, fees: [...fees.values()], notModelled, forecast: file.forecast };
}

/** Two enabled fees for one level whose dates overlap: the file must choose one reading. */
function feeClashes(fees: Fee[]): void {
  const on = fees.filter((f) => f.enabled);
  for (let i = 0; i < on.length; i++) {
    for (let j = i + 1; j < on.length; j++) {
      const [a, b] = [on[i], on[j]];
      if (a.network !== b.network || a.program !== b.program || a.level !== b.level) continue;
      const overlap = (a.effective_from ?? '') <= (b.effective_to ?? '9999') && (b.effective_from ?? '') <= (a.effective_to ?? '9999');
      if (overlap) throw new ConfigError([`thresholds: fees "${a.id}" and "${b.id}" both price ${a.network} ${a.program} ${a.level} for the same dates; choose one reading with "disable": ["${a.id}"] or ["${b.id}"]`]);
    }
  }
}

/** Thresholds text as data: YAML when the name says so, else JSON. */
function parseText(text: string, name: string): unknown {
  const yaml = /\.ya?ml$/i.test(name);
  try {
    return yaml ? parseYaml(text) : JSON.parse(text);
  } catch (e) {
    throw new ConfigError([`${name} is not valid ${yaml ? 'YAML' : 'JSON'}: ${(e as Error).message}`]);
  }
}

/** Parses thresholds text (JSON or YAML); errors name the field. */
export function parseThresholds(text: string, name = 'thresholds file'): RuleSet {
  return resolveRules(parseOrThrow(ThresholdsFileSchema, parseText(text, name) ?? {}, name));
}

/** A rule set as loadRules gives it: the rules, and where its default region came from. */
export type LoadedRules = RuleSet & {
  /** Where defaultRegion came from, as said to people: "CBP_DEFAULT_REGION", "default_region in <file>" or "built-in". */
  defaultRegionFrom: string;
};

/** The rules in force: CBP_THRESHOLDS_FILE if set, else the reference defaults. The default region: the file's, else
 * CBP_DEFAULT_REGION, else US; both set and different is refused (docs/spec-decisions.md "The default region"). Every
 * region named must be one the rules know (contract/regions.ts): "Europe" would match no VAMP rule. */
export function loadRules(file?: string, opts: { defaultRegion?: string } = {}): LoadedRules {
  if (file && !existsSync(file)) throw new ConfigError([`CBP_THRESHOLDS_FILE ${file} does not exist`]);
  const raw = file ? parseText(readFileSync(file, 'utf8'), file) ?? {} : {};
  const set = resolveRules(parseOrThrow(ThresholdsFileSchema, raw, file ?? 'thresholds'));
  // (the file's own default_region, not the schema's default)
  const own = typeof raw === 'object' && !Array.isArray(raw) && (raw as Record<string, unknown>).default_region !== undefined;
  const problems: string[] = [];
  const [defaultRegion, defaultRegionFrom] = own ? [set.defaultRegion, `default_region in ${file}`]
    : opts.defaultRegion !== undefined ? [opts.defaultRegion, 'CBP_DEFAULT_REGION'] : [BUILT_IN_DEFAULT_REGION, 'built-in'];
  if (own && opts.defaultRegion !== undefined && opts.defaultRegion !== set.defaultRegion) {
    problems.push(`CBP_DEFAULT_REGION is ${opts.defaultRegion} but the thresholds file ${file} sets default_region: ${set.defaultRegion}; keep one of them (or make them agree)`);
  }
  const unknown = (where: string, r: string | undefined) => {
    if (r !== undefined && !(REGIONS as readonly string[]).includes(r)) problems.push(`${where}: unknown region ${JSON.stringify(r)}; expected one of ${REGIONS.join(', ')}`);
  };
  unknown(defaultRegionFrom, defaultRegion);
  for (const [mid, o] of Object.entries(set.mids)) unknown(`${file ?? 'thresholds'}: mids.${mid}.region`, o.region);
  for (const [id, g] of Object.entries(set.groups ?? {})) unknown(`${file ?? 'thresholds'}: groups.${id}.region`, g.region);
  if (problems.length) throw new ConfigError(problems);
  return { ...set, defaultRegion, defaultRegionFrom };
}
