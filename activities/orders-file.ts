// Reading the merchant's order file in batches: NDJSON (one order per line) or CSV (a header row, one order
// per record). Each record is validated with MerchantOrderSchema; a record that fails is reported with its
// line (NDJSON) or record (CSV) number and every field at fault, and is not pushed.
//
// Cursors are opaque to the workflow but deterministic: NDJSON `n:<byte offset>:<lines so far>` (a batch reads
// from the offset, so a big file is read once overall), CSV `c:<records so far>` (the parser restarts and skips,
// since a CSV record may span lines).
import { createReadStream, existsSync, openSync, readSync, closeSync } from 'node:fs';
import { parse } from 'csv-parse';
import { MerchantOrderSchema, type MerchantOrder } from '../contract/orders.ts';
import { safeParseWith } from '../contract/issues.ts';
import { NotFoundError, UsageError } from '../lib/errors.ts';
import type { InvalidOrderLine, OrderBatch } from './types.ts';

export type OrderFileFormat = 'ndjson' | 'csv';

/** By extension (.ndjson, .jsonl, .json → NDJSON; .csv → CSV), else by the first non-blank character. */
export function orderFileFormat(file: string): OrderFileFormat {
  if (/\.(nd)?jsonl?$|\.ndjson$|\.json$/i.test(file)) return 'ndjson';
  if (/\.csv$/i.test(file)) return 'csv';
  const fd = openSync(file, 'r');
  try {
    const buf = Buffer.alloc(512);
    const n = readSync(fd, buf, 0, buf.length, 0);
    const first = buf.subarray(0, n).toString('utf8').replace(/^\uFEFF/, '').trimStart()[0];
    return first === '{' ? 'ndjson' : 'csv';
  } finally {
    closeSync(fd);
  }
}

function validate(input: unknown, line: number): { order?: MerchantOrder; invalid?: InvalidOrderLine } {
  const r = safeParseWith(MerchantOrderSchema, input);
  if (r.ok) return { order: r.value as MerchantOrder };
  const id = typeof input === 'object' && input !== null ? (input as Record<string, unknown>).order_id : undefined;
  return { invalid: { line, ...(typeof id === 'string' && id ? { order_id: id } : {}), message: r.issues.join('; ') } };
}

function badCursor(cursor: string): never {
  throw new UsageError(`order file cursor ${JSON.stringify(cursor)} is not one this reader gave out`);
}

async function readNdjson(file: string, cursor: string | undefined, batchSize: number): Promise<OrderBatch> {
  let offset = 0;
  let lineNo = 0;
  if (cursor !== undefined) {
    const m = /^n:(\d+):(\d+)$/.exec(cursor);
    if (!m) badCursor(cursor);
    offset = Number(m[1]);
    lineNo = Number(m[2]);
  }
  const out: OrderBatch = { orders: [], invalid: [], next: null };
  let taken = 0;
  let pos = offset;
  let rest = Buffer.alloc(0);
  const stream = createReadStream(file, { start: offset, highWaterMark: 256 * 1024 });
  const take = (raw: Buffer) => {
    lineNo++;
    const text = raw.toString('utf8').replace(/^\uFEFF/, '').trim();
    if (text === '') return;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (e) {
      out.invalid.push({ line: lineNo, message: `not valid JSON: ${(e as Error).message.split('\n')[0]}` });
      taken++;
      return;
    }
    const v = validate(value, lineNo);
    if (v.order) out.orders.push(v.order);
    else if (v.invalid) out.invalid.push(v.invalid);
    taken++;
  };
  try {
    for await (const chunk of stream) {
      let buf = rest.length ? Buffer.concat([rest, chunk as Buffer]) : (chunk as Buffer);
      let nl: number;
      while ((nl = buf.indexOf(0x0a)) !== -1) {
        if (taken >= batchSize) {
          // More follows: stop here; the next batch starts at this line.
          out.next = `n:${pos}:${lineNo}`;
          return out;
        }
        take(buf.subarray(0, nl));
        pos += nl + 1;
        buf = buf.subarray(nl + 1);
      }
      rest = Buffer.from(buf);
    }
  } finally {
    stream.destroy();
  }
  if (rest.length && rest.toString('utf8').trim() !== '') {
    if (taken >= batchSize) {
      out.next = `n:${pos}:${lineNo}`;
      return out;
    }
    take(rest);
  }
  return out;
}

/** A CSV cell: empty means "not given"; a cell holding a JSON array or object (shipments, notes) is parsed. */
function cell(v: string): unknown {
  const t = v.trim();
  if (t === '') return undefined;
  if ((t.startsWith('[') && t.endsWith(']')) || (t.startsWith('{') && t.endsWith('}'))) {
    try {
      return JSON.parse(t);
    } catch {
      return v;
    }
  }
  return v;
}

async function readCsv(file: string, cursor: string | undefined, batchSize: number): Promise<OrderBatch> {
  let skip = 0;
  if (cursor !== undefined) {
    const m = /^c:(\d+)$/.exec(cursor);
    if (!m) badCursor(cursor);
    skip = Number(m[1]);
  }
  const out: OrderBatch = { orders: [], invalid: [], next: null };
  const parser = createReadStream(file).pipe(parse({ columns: true, bom: true, skip_empty_lines: true, relax_column_count: true, trim: false }));
  let n = 0;
  try {
    for await (const rec of parser as AsyncIterable<Record<string, string>>) {
      n++;
      if (n <= skip) continue;
      if (n > skip + batchSize) {
        out.next = `c:${skip + batchSize}`;
        break;
      }
      const obj: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(rec)) {
        const c = cell(String(v ?? ''));
        if (c !== undefined && k.trim() !== '') obj[k.trim()] = c;
      }
      const v = validate(obj, n);
      if (v.order) out.orders.push(v.order);
      else if (v.invalid) out.invalid.push(v.invalid);
    }
  } catch (e) {
    throw new UsageError(`${file} could not be read as CSV orders near record ${n + 1}: ${(e as Error).message}`);
  } finally {
    parser.destroy();
  }
  return out;
}

/** One batch of orders from `file`, starting at `cursor`. */
export async function readOrderBatch(file: string, cursor: string | undefined, batchSize: number): Promise<OrderBatch> {
  if (!existsSync(file)) throw new NotFoundError(`order file ${file} does not exist`);
  if (!Number.isInteger(batchSize) || batchSize < 1) throw new UsageError(`batchSize must be a whole number of at least 1, got ${batchSize}`);
  return orderFileFormat(file) === 'csv' ? readCsv(file, cursor, batchSize) : readNdjson(file, cursor, batchSize);
}
