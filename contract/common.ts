// Shared, tolerant primitives. The service's own documents disagree with themselves in places (date-time
// spellings, numbers rendered as strings, network names); these accept every reading the spec allows and
// normalise to one form, so the rest of cbp sees a single shape.
import { z } from 'zod';

/** Card brands of the spec's shared conventions. */
export const CARD_BRANDS = ['visa', 'mastercard', 'american_express', 'discover', 'diners', 'elo', 'paypal', 'jcb'] as const;
export type CardBrand = (typeof CARD_BRANDS)[number];

/** The four networks that have monitoring programs and MID report objects. */
export const NETWORKS = ['visa', 'mastercard', 'american_express', 'discover'] as const;
export type Network = (typeof NETWORKS)[number];

/**
 * Every spelling of a card brand cbp accepts, by its key (brandKey), and the brand it names: the one table of
 * them. The store's SQL is generated from it (store/load/typing.ts brandSql), and so are the MID report's network
 * keys (contract/reporting.ts, store/load/columns.ts).
 */
export const BRAND_ALIASES: Readonly<Record<string, CardBrand>> = {
  visa: 'visa',
  mastercard: 'mastercard',
  master_card: 'mastercard',
  mc: 'mastercard',
  american_express: 'american_express',
  americanexpress: 'american_express',
  amex: 'american_express',
  discover: 'discover',
  diners: 'diners',
  diners_club: 'diners',
  elo: 'elo',
  paypal: 'paypal',
  jcb: 'jcb',
};

/** The key a brand's spelling is looked up by: trimmed, lower case, each run of spaces and hyphens one `_`. */
export function brandKey(v: string): string {
  return v.trim().toLowerCase().replace(/[\s-]+/g, '_');
}

/** Normalises a card network's spelling (mastercard, MasterCard, master_card, ...) or returns undefined. */
export function normaliseBrand(v: unknown): CardBrand | undefined {
  if (typeof v !== 'string') return undefined;
  const key = brandKey(v);
  return Object.hasOwn(BRAND_ALIASES, key) ? BRAND_ALIASES[key] : undefined;
}

export const cardBrand = z.string().transform((v, ctx) => {
  const b = normaliseBrand(v);
  if (!b) {
    ctx.addIssue({ code: 'custom', message: `expected a card brand (${CARD_BRANDS.join(', ')})`, input: v });
    return z.NEVER;
  }
  return b;
});

const DECIMAL = /^\s*-?\d+(\.\d+)?\s*$/;

// Each union carries its own message: zod's default for a failed union is a bare "Invalid input", which
// names neither what was expected nor why (a missing field or a wrong type would otherwise say nothing).
const AMOUNT_MSG = 'expected an amount: a number or a decimal string such as "94.76"';

/** An amount as a number or a decimal string ("94.76"); always a finite number after parsing. */
export const amount = z.union([z.number(), z.string()], { error: AMOUNT_MSG }).transform((v, ctx) => {
  if (typeof v === 'number') {
    if (Number.isFinite(v)) return v;
  } else if (DECIMAL.test(v)) return Number(v);
  ctx.addIssue({ code: 'custom', message: AMOUNT_MSG, input: v });
  return z.NEVER;
});

/** A whole count as a number or a digit string. */
export const count = z.union([z.number(), z.string()], { error: 'expected a whole count (0, 1, 2, ...)' }).transform((v, ctx) => {
  // "600.0" too: some CSV writers print every number as a float.
  const n = typeof v === 'number' ? v : /^\s*\d+(\.0+)?\s*$/.test(v) ? Number(v) : NaN;
  if (Number.isInteger(n) && n >= 0) return n;
  ctx.addIssue({ code: 'custom', message: 'expected a whole count (0, 1, 2, ...)', input: v });
  return z.NEVER;
});

/** A ratio or other float, as a number or a decimal string. */
export const float = z.union([z.number(), z.string()], { error: 'expected a number' }).transform((v, ctx) => {
  const n = typeof v === 'number' ? v : /^\s*-?\d*\.?\d+(e-?\d+)?\s*$/i.test(v) ? Number(v) : NaN;
  if (Number.isFinite(n)) return n;
  ctx.addIssue({ code: 'custom', message: 'expected a number', input: v });
  return z.NEVER;
});

/** First six card digits as a number or a string; kept as a 6-digit string. */
export const cardFirst6 = z.union([z.number(), z.string()], { error: 'expected the first six card digits (a 6-digit number or string)' }).transform((v, ctx) => {
  const s = typeof v === 'number' && Number.isInteger(v) && v >= 0 ? String(v).padStart(6, '0') : String(v).trim();
  if (/^\d{6}$/.test(s)) return s;
  ctx.addIssue({ code: 'custom', message: 'expected the first six card digits (a 6-digit number or string)', input: v });
  return z.NEVER;
});

export const cardLast4 = z.union([z.number(), z.string()], { error: 'expected the last four card digits' }).transform((v, ctx) => {
  const s = typeof v === 'number' && Number.isInteger(v) && v >= 0 ? String(v).padStart(4, '0') : String(v).trim();
  if (/^\d{4}$/.test(s)) return s;
  ctx.addIssue({ code: 'custom', message: 'expected the last four card digits', input: v });
  return z.NEVER;
});

export const currency = z
  .string()
  .transform((v) => v.trim().toUpperCase())
  .pipe(z.string().regex(/^[A-Z]{3}$/, 'expected a three-letter ISO 4217 currency code such as USD'));

const DATE_RE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATETIME_RE = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(\.\d+)?)?\s*(Z|z|UTC|[+-]\d{2}:?\d{2})?$/;

function validYmd(y: number, m: number, d: number): boolean {
  const t = new Date(Date.UTC(y, m - 1, d));
  return t.getUTCFullYear() === y && t.getUTCMonth() === m - 1 && t.getUTCDate() === d;
}

/**
 * Parses `YYYY-MM-DDTHH:MM:SSZ`, `YYYY-MM-DD HH:MM:SS` (UTC), with optional fraction or offset, and
 * returns ISO 8601 UTC `YYYY-MM-DDTHH:MM:SSZ`; with allowDate, a bare `YYYY-MM-DD` is midnight UTC.
 */
export function toIsoUtc(v: string, allowDate = false): string | undefined {
  const s = v.trim();
  const d = DATE_RE.exec(s);
  if (d) {
    if (!allowDate || !validYmd(+d[1], +d[2], +d[3])) return undefined;
    return `${s}T00:00:00Z`;
  }
  const m = DATETIME_RE.exec(s);
  if (!m) return undefined;
  const [, y, mo, da, h, mi, se = '00', , zone] = m;
  if (!validYmd(+y, +mo, +da) || +h > 23 || +mi > 59 || +se > 59) return undefined;
  let ms = Date.UTC(+y, +mo - 1, +da, +h, +mi, +se);
  if (zone && /^[+-]/.test(zone)) {
    const z2 = zone.replace(':', '');
    const off = (+z2.slice(1, 3) * 60 + +z2.slice(3, 5)) * 60_000;
    ms += zone.startsWith('+') ? -off : off;
  }
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

const dateTimeMsg = 'expected a UTC date-time: YYYY-MM-DDTHH:MM:SSZ or YYYY-MM-DD HH:MM:SS';

/** A date-time in either of the spec's spellings, normalised to `YYYY-MM-DDTHH:MM:SSZ`. */
export const dateTime = z.string().transform((v, ctx) => {
  const iso = toIsoUtc(v);
  if (iso) return iso;
  ctx.addIssue({ code: 'custom', message: dateTimeMsg, input: v });
  return z.NEVER;
});

/** A report date-time: "date only if time not recorded", so a bare date is accepted too (as midnight UTC). */
export const dateTimeOrDate = z.string().transform((v, ctx) => {
  const iso = toIsoUtc(v, true);
  if (iso) return iso;
  ctx.addIssue({ code: 'custom', message: `${dateTimeMsg}, or a date YYYY-MM-DD`, input: v });
  return z.NEVER;
});

/** A calendar date `YYYY-MM-DD`. A date-time at midnight or any time is cut to its UTC date. */
export const date = z.string().transform((v, ctx) => {
  const s = v.trim();
  const d = DATE_RE.exec(s);
  if (d && validYmd(+d[1], +d[2], +d[3])) return s;
  const iso = toIsoUtc(s);
  if (iso) return iso.slice(0, 10);
  ctx.addIssue({ code: 'custom', message: 'expected a date YYYY-MM-DD', input: v });
  return z.NEVER;
});

/** The service's "if available" fields: absent, null or empty string all mean "not given". */
export function opt<T extends z.ZodType>(schema: T) {
  return z.preprocess((v) => (v === '' || v === null ? undefined : v), schema.optional());
}

/** Identifier strings (guids, case numbers, mids): non-empty; numbers are accepted and kept as strings. */
export const id = z.union([z.string(), z.number()], { error: 'expected a non-empty identifier (a string)' }).transform((v, ctx) => {
  const s = String(v).trim();
  if (s.length > 0) return s;
  ctx.addIssue({ code: 'custom', message: 'expected a non-empty identifier', input: v });
  return z.NEVER;
});

export const text = z.union([z.string(), z.number()], { error: 'expected a string' }).transform((v) => String(v));

/** Booleans of the order data interface, sent as 1 or 0; accepts 1/0, "1"/"0", true/false. */
export const flag = z.union([z.boolean(), z.number(), z.string()], { error: 'expected a boolean sent as 1 or 0' }).transform((v, ctx) => {
  if (v === true || v === 1 || v === '1' || v === 'true') return 1 as const;
  if (v === false || v === 0 || v === '0' || v === 'false') return 0 as const;
  ctx.addIssue({ code: 'custom', message: 'expected a boolean sent as 1 or 0', input: v });
  return z.NEVER;
});

/** Error body of every interface: {error: true, message}. */
export const ErrorBodySchema = z.looseObject({ error: z.union([z.boolean(), z.string()], { error: 'expected error: true (or an error text)' }), message: z.string().optional() });
export type ErrorBody = z.infer<typeof ErrorBodySchema>;

export const TokenResponseSchema = z.looseObject({ token: z.string().min(1, 'expected a token') });
export type TokenResponse = z.infer<typeof TokenResponseSchema>;
