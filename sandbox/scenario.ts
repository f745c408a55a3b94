// The sandbox's scenario file: which MIDs exist, how busy and how healthy each is, and any figures a test
// wants exactly (per MID, month and network). Everything not pinned is drawn by the generator from the
// MID's profile. Unknown keys are errors, so a typo in a pinned figure fails instead of being ignored.
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import YAML from 'yaml';
import { NETWORKS, type Network, toIsoUtc } from '../contract/common.ts';
import { formatIssues } from '../contract/issues.ts';
import { NotFoundError, ValidationError } from '../lib/errors.ts';

export const PROFILES = ['healthy', 'hovering', 'breaching'] as const;
export type Profile = (typeof PROFILES)[number];
const ProfileSchema = z.enum(PROFILES, { error: (i) => `expected a profile: healthy, hovering or breaching, got ${JSON.stringify(i.input)}` });

const wholeCount = z.number({ error: 'expected a whole count (0, 1, 2, ...)' }).int('expected a whole count (0, 1, 2, ...)').nonnegative('expected a whole count (0, 1, 2, ...)');
const cents = z
  .number({ error: 'expected an amount in major units, e.g. 1234.56' })
  .nonnegative('expected an amount of 0 or more')
  .refine((v) => Math.abs(Math.round(v * 100) - v * 100) < 1e-6, 'expected an amount with at most two decimals');

/** Figures of one MID, month and network. Every one is optional: what is left out is drawn from the profile. */
export const NetworkMonthSchema = z
  .strictObject({
    /** settled transactions in the month */
    transactions: wholeCount.optional(),
    /** their total amount; pin it together with transactions */
    transaction_amount: cents.optional(),
    /** chargebacks received in the month */
    chargebacks: wholeCount.optional(),
    /** how many of them carry a fraud reason code */
    fraud_chargebacks: wholeCount.optional(),
    /** fraud reports (TC40, or SAFE for Mastercard) received in the month */
    tc40: wholeCount.optional(),
    ethoca: wholeCount.optional(),
    verifi: wholeCount.optional(),
    rdr: wholeCount.optional(),
    order_validations: wholeCount.optional(),
  })
  .refine((m) => m.fraud_chargebacks === undefined || m.chargebacks === undefined || m.fraud_chargebacks <= m.chargebacks, {
    message: 'expected fraud_chargebacks at most chargebacks',
    path: ['fraud_chargebacks'],
  })
  .refine((m) => m.transaction_amount === undefined || m.transactions !== undefined, {
    message: 'expected transactions pinned too when transaction_amount is pinned',
    path: ['transactions'],
  })
  .refine((m) => !(m.transactions === 0 && (m.transaction_amount ?? 0) > 0), {
    message: 'expected transaction_amount 0 when transactions is 0',
    path: ['transaction_amount'],
  });
export type NetworkMonth = z.infer<typeof NetworkMonthSchema>;

const networkShape = <T extends z.ZodType>(s: T) => ({ visa: s.optional(), mastercard: s.optional(), american_express: s.optional(), discover: s.optional() });

export const MONTH_RE = /^\d{4}-(0[1-9]|1[0-2])$/;
const MonthKey = z.string().regex(MONTH_RE, 'expected a month key YYYY-MM');

const share = z.number({ error: 'expected a share between 0 and 1' }).min(0, 'expected a share between 0 and 1').max(1, 'expected a share between 0 and 1');

export const ScenarioMidSchema = z
  .strictObject({
    mid: z.string({ error: 'expected the MID as a string' }).trim().min(1, 'expected a non-empty MID'),
    alias: z.string().optional(),
    gateways: z.array(z.string().min(1)).optional(),
    /** Visa region (VAMP thresholds differ): US, CA, EU, AP, LAC, CEMEA, AU */
    region: z.string().min(1).default('US'),
    /** billing descriptor shown on alerts */
    descriptor: z.string().min(1).optional(),
    currency: z
      .string()
      .regex(/^[A-Z]{3}$/, 'expected a three-letter ISO 4217 currency code such as USD')
      .default('USD'),
    /** how unpinned months are drawn; 'breaching' worsens from three months before the start */
    profile: ProfileSchema.default('healthy'),
    /** a different profile for some networks, e.g. {"mastercard": "breaching"} */
    network_profiles: z.strictObject(networkShape(ProfileSchema)).optional(),
    /** settled transactions per month over all networks, for unpinned months */
    monthly_transactions: wholeCount.default(3000),
    /** share of transactions per network (normalised) */
    mix: z.strictObject(networkShape(share)).optional(),
    /** mean order amount in major units */
    average_ticket: z.number().positive('expected an average ticket above 0').default(60),
    /** physical goods get tracking numbers on their orders; digital goods proof of service */
    goods: z.enum(['physical', 'digital']).default('physical'),
    /** pinned figures: month (YYYY-MM) -> network -> figures */
    months: z.record(z.string(), z.strictObject(networkShape(NetworkMonthSchema))).optional(),
  })
  .superRefine((m, ctx) => {
    // Checked here rather than by the record's key schema, whose issue does not say what a key should be.
    for (const k of Object.keys(m.months ?? {})) {
      if (!MonthKey.safeParse(k).success) ctx.addIssue({ code: 'custom', path: ['months', k], message: `expected a month key YYYY-MM, got ${JSON.stringify(k)}`, input: k });
    }
  });
export type ScenarioMid = z.infer<typeof ScenarioMidSchema>;

export const ScenarioSchema = z
  .strictObject({
    name: z.string().optional(),
    description: z.string().optional(),
    /** suggested clock start and seed, used when the command line gives none */
    start: z
      .string()
      .refine((v) => toIsoUtc(v, true) !== undefined, 'expected a UTC date-time such as 2026-11-01T00:00:00Z')
      .optional(),
    seed: z.number().int('expected a whole seed').nonnegative().optional(),
    /** whole months of data before the start's month */
    history_months: z.number().int().min(0).max(60, 'expected at most 60 history months').default(6),
    /** whole months of data after the start's month */
    horizon_months: z.number().int().min(0).max(36, 'expected at most 36 horizon months').default(3),
    /** merchant orders unrelated to any case (pushed by the demo beside the matching ones) */
    orders: wholeCount.default(300),
    /** share of chargebacks and alerts that have a merchant order in World.orders */
    order_share: share.default(0.35),
    mids: z.array(ScenarioMidSchema).min(1, 'expected at least one MID'),
  })
  .superRefine((s, ctx) => {
    const seen = new Map<string, number>();
    s.mids.forEach((m, i) => {
      const j = seen.get(m.mid);
      if (j !== undefined) ctx.addIssue({ code: 'custom', path: ['mids', i, 'mid'], message: `expected a unique MID; ${m.mid} is also mids.${j}.mid`, input: m.mid });
      seen.set(m.mid, i);
    });
  });
export type Scenario = z.infer<typeof ScenarioSchema>;
export type ScenarioInput = z.input<typeof ScenarioSchema>;

/** Validates a scenario object; a bad one throws a ValidationError naming each field. */
export function parseScenario(input: unknown, what = 'scenario'): Scenario {
  const r = ScenarioSchema.safeParse(input);
  if (!r.success) throw new ValidationError(what, formatIssues(r.error, input));
  return r.data;
}

/** Reads and validates a scenario file (JSON; .yaml/.yml files are read as YAML). */
export function loadScenario(file: string): Scenario {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new NotFoundError(`scenario file ${file} cannot be read: ${(e as Error).message}`, { cause: e });
  }
  let data: unknown;
  try {
    data = /\.ya?ml$/i.test(file) ? YAML.parse(text) : JSON.parse(text);
  } catch (e) {
    throw new ValidationError(`scenario file ${file}`, [`(the whole file): not valid ${/\.ya?ml$/i.test(file) ? 'YAML' : 'JSON'}: ${(e as Error).message}`]);
  }
  return parseScenario(data, `scenario file ${file}`);
}

/**
 * The built-in world: eight MIDs, one over each card network's program. 860100000101 breaches Mastercard's
 * ECM from three months before the start (about 140 chargebacks a month over about 6,500 previous-month
 * transactions, ~2.2%); 860100000102 is a CEMEA merchant over Visa VAMP (disputes + TC40 ~2.8% of ~8,000
 * transactions, > 150 and > USD 75,000); 860100000107 is over American Express's excessive chargebacks
 * (~1.4% of ~1,800 Amex charges, three months running by the start); 860100000108 over Discover's excessive
 * dispute (~1.4% of ~9,600 Discover sales, > 100 chargebacks); 860100000103 hovers just under Mastercard and
 * Visa; the other three are healthy. About 5,200 chargebacks in all.
 */
export const DEFAULT_SCENARIO_INPUT: ScenarioInput = {
  name: 'default',
  description: 'Eight MIDs: one over Mastercard ECM, one over Visa VAMP (CEMEA), one over Amex excessive, one over Discover excessive, one hovering below Mastercard and Visa, three healthy.',
  history_months: 6,
  horizon_months: 3,
  orders: 300,
  order_share: 0.35,
  mids: [
    {
      mid: '860100000101',
      alias: 'Acme Outdoor US',
      gateways: ['nmi-4410', 'authnet-acme-1'],
      region: 'US',
      descriptor: 'ACME*OUTDOOR 800-555-0101',
      profile: 'healthy',
      network_profiles: { mastercard: 'breaching' },
      monthly_transactions: 10000,
      mix: { visa: 0.25, mastercard: 0.65, american_express: 0.06, discover: 0.04 },
      average_ticket: 85,
    },
    {
      mid: '860100000102',
      alias: 'Sahara Electronics',
      gateways: ['checkout-sahara'],
      region: 'CEMEA',
      descriptor: 'SAHARA ELEC DUBAI',
      profile: 'healthy',
      network_profiles: { visa: 'breaching' },
      monthly_transactions: 11000,
      mix: { visa: 0.75, mastercard: 0.2, american_express: 0.05, discover: 0 },
      average_ticket: 450,
    },
    {
      mid: '860100000103',
      alias: 'Blue Lantern Books',
      gateways: ['stripe-bluelantern'],
      region: 'US',
      descriptor: 'BLUELANTERN BOOKS',
      profile: 'hovering',
      monthly_transactions: 12000,
      mix: { visa: 0.35, mastercard: 0.55, american_express: 0.06, discover: 0.04 },
      average_ticket: 35,
    },
    {
      mid: '860100000104',
      alias: 'Cedar Coffee Co',
      gateways: ['braintree-cedar'],
      region: 'US',
      descriptor: 'CEDAR COFFEE CO',
      monthly_transactions: 4000,
      average_ticket: 28,
    },
    {
      mid: '860100000105',
      alias: 'Delta Digital Games',
      gateways: ['adyen-delta-eu'],
      region: 'EU',
      descriptor: 'DELTA*GAMES',
      monthly_transactions: 3000,
      average_ticket: 20,
      goods: 'digital',
    },
    {
      mid: '860100000106',
      alias: 'Evergreen Pets',
      gateways: ['nmi-4417'],
      region: 'US',
      descriptor: 'EVERGREEN PETS',
      monthly_transactions: 2500,
      average_ticket: 55,
    },
    {
      mid: '860100000107',
      alias: 'Fjord Travel Club',
      gateways: ['amex-direct-fjord'],
      region: 'US',
      descriptor: 'FJORD TRAVEL CLUB',
      profile: 'healthy',
      network_profiles: { american_express: 'breaching' },
      monthly_transactions: 3000,
      mix: { visa: 0.2, mastercard: 0.2, american_express: 0.6, discover: 0 },
      average_ticket: 240,
    },
    {
      mid: '860100000108',
      alias: 'Gulf Coast Fuel',
      gateways: ['discover-gcf'],
      region: 'US',
      descriptor: 'GULF COAST FUEL',
      profile: 'healthy',
      network_profiles: { discover: 'breaching' },
      monthly_transactions: 12000,
      mix: { visa: 0.1, mastercard: 0.1, american_express: 0, discover: 0.8 },
      average_ticket: 60,
    },
  ],
};

export const DEFAULT_SCENARIO: Scenario = parseScenario(DEFAULT_SCENARIO_INPUT, 'built-in scenario');

export const NETWORK_LIST: readonly Network[] = NETWORKS;
