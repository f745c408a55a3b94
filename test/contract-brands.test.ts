// Card brands have one table of spellings (contract/common.ts BRAND_ALIASES): the report load's SQL is
// generated from it and the events view's is checked against it here, so the three read every spelling alike.
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BRAND_ALIASES, CARD_BRANDS, normaliseBrand } from '../contract/common.ts';
import type { Store } from '../store/db.ts';
import { openTestStore } from './helpers/store-template.ts';
import { loadReport } from '../store/load.ts';
import { ROOT, chargeback, tmpDir, writeJson } from './store-fixtures.ts';

/** Every alias in the spellings a person or a spreadsheet gives it, and spellings no brand has. */
function spellings(): string[] {
  const out = new Set<string>();
  for (const key of Object.keys(BRAND_ALIASES)) {
    const words = key.split('_');
    out.add(key);
    out.add(key.toUpperCase());
    out.add(words.map((w) => w[0].toUpperCase() + w.slice(1)).join(' '));
    out.add(words.join('-'));
    out.add(words.join(' - '));
    out.add(words.join('  '));
    out.add(words.join('\t'));
    out.add(` ${key} `);
    out.add(`\t${key}\u00a0`);
    out.add(`\u3000${words.join('\u2003')}\n`);
  }
  for (const other of ['unionpay', 'Maestro', 'visa electron', 'visa_', '-visa', 'v isa', 'mc!', 'master__card', 'constructor', 'toString', '__proto__', 'hasOwnProperty']) {
    out.add(other);
  }
  return [...out];
}

const expected = (v: string) => normaliseBrand(v) ?? null;

let store: Store;
beforeAll(async () => {
  store = await openTestStore({ dbPath: ':memory:' });
});
afterAll(() => store.close());

describe('card brand spellings', () => {
  it("are one table in the contract: a name that is no alias is no brand, whatever Object's prototype holds", () => {
    expect(new Set(Object.values(BRAND_ALIASES))).toEqual(new Set(CARD_BRANDS));
    for (const b of CARD_BRANDS) expect(BRAND_ALIASES[b]).toBe(b);
    for (const v of ['constructor', 'toString', '__proto__', 'hasOwnProperty', 'valueOf']) expect(normaliseBrand(v)).toBeUndefined();
    expect(normaliseBrand('Master - Card')).toBe('mastercard');
    expect(normaliseBrand('\tDiners\u00a0Club ')).toBe('diners');
  });

  it('read alike in the contract and the events view, known or not', async () => {
    const got: Array<[string, string | null]> = [];
    for (const v of spellings()) {
      const [r] = await store.all<{ b: string | null }>('SELECT stg_card_brand($1) AS b', [v]);
      got.push([v, r.b]);
    }
    expect(got).toEqual(spellings().map((v) => [v, expected(v)]));
  });

  it("read alike in the contract and the report load: a known spelling is stored as its brand, an unknown one quarantines its row", async () => {
    // Blank values are "not given" in a report (the load's rule for every optional field): not compared here.
    const values = spellings().filter((v) => v.trim() !== '');
    const dir = tmpDir();
    const s = await openTestStore({ dbPath: path.join(dir, 'cbp.duckdb') });
    try {
      const file = writeJson(dir, 'cb.json', values.map((v, i) => chargeback({ case_number: `CB-${i}`, card_type: v })));
      const r = await loadReport(s, file, { kind: 'chargebacks', seenAt: '2024-03-05T00:00:00Z' });
      const stored = new Map(
        (await s.all<{ case_number: string; card_type: string }>('SELECT case_number, card_type::VARCHAR AS card_type FROM chargebacks')).map((x) => [x.case_number, x.card_type]),
      );
      const quarantined = new Map(
        (await s.all<{ raw: string; reason: string }>('SELECT raw, reason FROM quarantine')).map((x) => [String(JSON.parse(x.raw).case_number), x.reason]),
      );
      const read = values.map((v, i) => {
        const key = `CB-${i}`;
        return [v, stored.get(key) ?? (quarantined.get(key)?.startsWith('card_type: a card brand') ? 'quarantined' : 'lost')];
      });
      expect(read).toEqual(values.map((v) => [v, expected(v) ?? 'quarantined']));
      expect(r.rowsRead).toBe(values.length);
    } finally {
      s.close();
    }
  });

  it("leave an event's card_brand NULL when the contract knows no such brand, the text as sent kept in card_brand_text", async () => {
    const s = await openTestStore({ dbPath: ':memory:' });
    try {
      const event = (guid: string, type: string, brand: string) =>
        s.run(
          `INSERT INTO events_raw VALUES ($1, $2, TIMESTAMP '2026-11-01 09:00:00', TIMESTAMP '2026-11-01 09:00:01', $3::JSON, 'seg', 1, TIMESTAMP '2026-11-01 09:01:00')`,
          [guid, type, JSON.stringify({ event_guid: guid, event_type: type, mid: 'MID-1', case_number: guid, card_brand: brand })],
        );
      await event('ev_1', 'chargeback.new', 'UnionPay');
      await event('ev_2', 'chargeback.new', 'Master Card');
      await event('ev_3', 'chargeback.match', 'Diners-Club');
      await event('ev_4', 'order_validation.new', ' AMEX ');
      await event('ev_5', 'order_validation.match', 'maestro');
      const rows = await s.all(
        `SELECT event_guid, card_brand, card_brand_text FROM (
           SELECT event_guid, card_brand, card_brand_text FROM stg_events__chargeback_new
           UNION ALL SELECT event_guid, card_brand, card_brand_text FROM stg_events__chargeback_match
           UNION ALL SELECT event_guid, card_brand, card_brand_text FROM stg_events__order_validation_new
           UNION ALL SELECT event_guid, card_brand, card_brand_text FROM stg_events__order_validation_match) ORDER BY 1`,
      );
      expect(rows).toEqual([
        { event_guid: 'ev_1', card_brand: null, card_brand_text: 'UnionPay' },
        { event_guid: 'ev_2', card_brand: 'mastercard', card_brand_text: 'Master Card' },
        { event_guid: 'ev_3', card_brand: 'diners', card_brand_text: 'Diners-Club' },
        { event_guid: 'ev_4', card_brand: 'american_express', card_brand_text: 'AMEX' },
        { event_guid: 'ev_5', card_brand: null, card_brand_text: 'maestro' },
      ]);
    } finally {
      s.close();
    }
  });
});
