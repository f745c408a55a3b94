// Long JSON records (store/long-rows.ts says why): the elements of a JSON array too long for DuckDB's reader, found
// and parsed by cbp when that reader refused the file for a record's size.
import { open } from 'node:fs/promises';
import { mibText } from '../lib/size.ts';
import { CHUNK, HEAD_CHARS, ROW_LIMIT, headOf, prefixOf, readAt, type LongRow, type Span } from './long-rows.ts';

/** A JSON record up to this size is parsed by cbp when DuckDB's reader refuses it; a bigger one is set aside as written. */
const JSON_PARSE_CAP = 64 * 1024 * 1024;

/** A long element of a JSON array, and the bytes to take out with it so the rest stays a valid array. */
export interface JsonElement extends Span {
  cut: Span;
}

/**
 * The elements of a JSON array file longer than `threshold` bytes. Strings (with their escapes) are skipped
 * whole, so braces inside text do not count. Each element's cut takes one separating comma with it: the one
 * before it when an element before it stays, else the one after it.
 */
export async function scanJsonArray(file: string, threshold: number): Promise<JsonElement[]> {
  const fh = await open(file, 'r');
  const out: JsonElement[] = [];
  let depth = 0;
  let inStr = false;
  let esc = false;
  let start = -1;
  let lastComma = -1;
  let elements = 0;
  let waiting: JsonElement | undefined; // a long element whose following comma is not seen yet
  let base = 0;
  try {
    const buf = Buffer.allocUnsafe(CHUNK);
    for (;;) {
      const b = await readAt(fh, buf, base);
      if (b.length === 0) break;
      let i = 0;
      let bs = -1; // the next backslash at or after i (b.length: none in this chunk), valid while bs >= i
      while (i < b.length) {
        if (inStr) {
          if (esc) {
            esc = false;
            i++;
            continue;
          }
          // Jump to the next quote or backslash.
          let q = b.indexOf(34, i);
          if (bs < i) {
            bs = b.indexOf(92, i);
            if (bs < 0) bs = b.length;
          }
          if (bs < b.length && (q < 0 || bs < q)) {
            esc = true;
            i = bs + 1;
            continue;
          }
          if (q < 0) q = b.length;
          else inStr = false;
          i = q + 1;
          continue;
        }
        const c = b[i];
        if (c === 34) inStr = true;
        else if (c === 123 || c === 91) {
          depth++;
          if (depth === 2) start = base + i;
        } else if (c === 125 || c === 93) {
          depth--;
          if (depth === 1 && start >= 0) {
            const end = base + i + 1;
            if (end - start > threshold) {
              const keptBefore = elements - out.length > 0;
              const el: JsonElement = { start, end, cut: keptBefore ? { start: lastComma, end } : { start, end } };
              out.push(el);
              if (!keptBefore) waiting = el;
            }
            elements++;
            start = -1;
          }
        } else if (c === 44 && depth === 1) {
          lastComma = base + i;
          if (waiting) {
            waiting.cut.end = lastComma + 1;
            waiting = undefined;
          }
        }
        i++;
      }
      base += b.length;
    }
  } finally {
    await fh.close();
  }
  return out;
}

/**
 * One long JSON record, parsed by cbp: the values of `columns` as DuckDB's reader gives them (text as is, a
 * number or boolean as its text, an object or array as JSON text, absent or null as NULL). A record bigger than
 * JSON_PARSE_CAP is not parsed: it is set aside as written.
 */
export async function parseJsonRecord(file: string, span: Span, columns: readonly string[]): Promise<LongRow> {
  const size = span.end - span.start;
  const fh = await open(file, 'r');
  let text: string;
  try {
    const bytes = Buffer.allocUnsafe(size > JSON_PARSE_CAP ? 4 * HEAD_CHARS : size);
    const { bytesRead } = await fh.read(bytes, 0, bytes.length, span.start);
    if (size > JSON_PARSE_CAP) {
      return {
        ok: false,
        raw: JSON.stringify({ json_record: headOf(new TextDecoder('utf-8').decode(bytes.subarray(0, bytesRead))) }),
        reason: `row: ${mibText(size)} as written, over the ${ROW_LIMIT / 1048576} MiB limit for one row`,
      };
    }
    try {
      text = new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(0, bytesRead));
    } catch {
      return {
        ok: false,
        raw: JSON.stringify({ json_record: headOf(new TextDecoder('utf-8').decode(bytes.subarray(0, 4 * HEAD_CHARS))) }),
        reason: 'row: bytes that are not UTF-8 (invalid encoding)',
      };
    }
  } finally {
    await fh.close();
  }
  let rec: unknown;
  try {
    rec = JSON.parse(text);
  } catch (e) {
    throw new Error(`the record at byte ${span.start}: ${(e as Error).message}`);
  }
  if (rec === null || typeof rec !== 'object' || Array.isArray(rec)) {
    return { ok: false, raw: JSON.stringify({ json_record: headOf(text) }), reason: 'row: not a JSON object' };
  }
  const obj = rec as Record<string, unknown>;
  const values: Record<string, string | null> = {};
  let bytes = 0;
  let bigField: string | null = null;
  let bigBytes = 0;
  for (const c of columns) {
    const v = obj[c];
    const s = v === undefined || v === null ? null : typeof v === 'string' ? v : typeof v === 'object' ? JSON.stringify(v) : String(v);
    values[c] = s;
    const n = s === null ? 0 : Buffer.byteLength(s);
    bytes += n;
    if (n > bigBytes) (bigBytes = n), (bigField = c);
  }
  if (bytes > ROW_LIMIT) for (const c of columns) if (values[c] !== null) values[c] = prefixOf(values[c] as string);
  return { ok: true, values, bytes, bigField, bigBytes };
}
