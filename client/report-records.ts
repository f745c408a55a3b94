// Reads a downloaded report file record by record, never whole: CSV through csv-parse (columns from the
// header row), JSON through a small scanner that finds each top-level array element by tracking depth and
// string state and JSON.parses that element alone.
import { createReadStream } from 'node:fs';
import { parse } from 'csv-parse';
import type { OutputFormat, ReportKind } from '../contract/index.ts';
import { CbpError } from '../lib/errors.ts';

export type RawRecord = Record<string, unknown>;

/** A report file that is not the format it claims. */
export class ReportFormatError extends CbpError {
  constructor(file: string, kind: string, format: string, problem: string) {
    super(
      'CBP_ERR_REPORT_FORMAT',
      `${kind} report ${file} is not valid ${format}: ${problem} — the file is kept as received; fetch it again or inspect it`,
      { details: { file, kind, format } },
    );
  }
}

/** The raw records of a report file; an empty file (or whitespace only) yields none. */
export function readReportRecords(file: string, kind: ReportKind, format: OutputFormat | 'json' | 'csv'): AsyncIterable<RawRecord> {
  const f = format.toUpperCase();
  if (f === 'CSV') return readCsv(file, kind);
  if (f === 'JSON') return readJsonArray(file, kind);
  throw new ReportFormatError(file, kind, format, 'unknown format (expected JSON or CSV)');
}

/** Byte offset of the first character that is not whitespace (or a BOM); undefined for a blank file. */
async function firstContent(file: string): Promise<number | undefined> {
  let offset = 0;
  for await (const chunk of createReadStream(file, { highWaterMark: 64 * 1024 }) as AsyncIterable<Buffer>) {
    for (let i = 0; i < chunk.length; i++) {
      const c = chunk[i];
      if (c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d && c !== 0xef && c !== 0xbb && c !== 0xbf) return offset + i;
    }
    offset += chunk.length;
  }
  return undefined;
}

async function* readCsv(file: string, kind: string): AsyncGenerator<RawRecord> {
  // Blank lines before the header (and a blank file: an empty report) would otherwise become the header.
  const start = await firstContent(file);
  if (start === undefined) return;
  const parser = createReadStream(file, { start }).pipe(
    parse({
      columns: (header: string[]) => header.map((h) => h.trim()),
      bom: true,
      skip_empty_lines: true,
      relax_column_count: true,
      // A line of blanks is not a record.
      on_record: (r: Record<string, unknown>) => (Object.values(r).every((v) => typeof v === 'string' && v.trim() === '') ? null : r),
    }),
  );
  try {
    for await (const row of parser) yield row as RawRecord;
  } catch (e) {
    throw new ReportFormatError(file, kind, 'CSV', (e as Error).message);
  }
}

const WS = new Set([0x20, 0x09, 0x0a, 0x0d, 0xfeff]);

/**
 * Streams the elements of a top-level JSON array. State survives chunk boundaries: the text of the element
 * being read (pending), nesting depth, and whether the scanner is inside a string or after a backslash.
 */
async function* readJsonArray(file: string, kind: string): AsyncGenerator<RawRecord> {
  const bad = (problem: string) => new ReportFormatError(file, kind, 'JSON', problem);
  let seenOpen = false;
  let closed = false;
  let depth = 0; // depth inside the top-level array: 0 between elements
  let inString = false;
  let escaped = false;
  let pending = ''; // text of the current element from earlier chunks
  let inElement = false;
  let expectComma = false;
  let offset = 0;

  const finish = (text: string): RawRecord => {
    let v: unknown;
    try {
      v = JSON.parse(text);
    } catch (e) {
      throw bad(`element near byte ${offset}: ${(e as Error).message}`);
    }
    if (v === null || typeof v !== 'object' || Array.isArray(v)) throw bad(`element near byte ${offset} is not an object: ${text.slice(0, 60)}`);
    return v as RawRecord;
  };

  const stream = createReadStream(file, { encoding: 'utf8', highWaterMark: 64 * 1024 });
  for await (const chunk of stream as AsyncIterable<string>) {
    const out: RawRecord[] = [];
    let start = inElement ? 0 : -1;
    for (let i = 0; i < chunk.length; i++) {
      const c = chunk.charCodeAt(i);
      if (inString) {
        if (escaped) escaped = false;
        else if (c === 0x5c) escaped = true;
        else if (c === 0x22) inString = false;
        continue;
      }
      if (!seenOpen) {
        if (WS.has(c)) continue;
        if (c !== 0x5b) throw bad(`expected a JSON array of records, found ${JSON.stringify(chunk.slice(i, i + 20))}`);
        seenOpen = true;
        continue;
      }
      if (closed) {
        if (WS.has(c)) continue;
        throw bad('text after the closing ]');
      }
      if (!inElement) {
        if (WS.has(c)) continue;
        if (c === 0x2c && expectComma) {
          expectComma = false;
          continue;
        }
        if (c === 0x5d && depth === 0) {
          closed = true;
          continue;
        }
        if (expectComma) throw bad(`expected , or ] between records near byte ${offset + i}`);
        inElement = true;
        start = i;
        pending = '';
      }
      // Inside an element.
      if (c === 0x22) inString = true;
      else if (c === 0x7b || c === 0x5b) depth++;
      else if (c === 0x7d || c === 0x5d) {
        if (depth === 0) {
          // A bare value ending at the array's ]: let finish() reject it as not an object.
          out.push(finish(pending + chunk.slice(start, i)));
          inElement = false;
          closed = true;
          continue;
        }
        depth--;
        if (depth === 0) {
          out.push(finish(pending + chunk.slice(start, i + 1)));
          pending = '';
          inElement = false;
          expectComma = true;
        }
      } else if (c === 0x2c && depth === 0) {
        out.push(finish(pending + chunk.slice(start, i)));
        pending = '';
        inElement = false;
      }
    }
    if (inElement) pending += chunk.slice(start);
    offset += chunk.length;
    yield* out;
  }
  if (!seenOpen) return; // empty or whitespace only: an empty report
  if (!closed) throw bad('the file ends before the closing ] (truncated download?)');
}
