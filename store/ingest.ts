// Loads sealed journal segments into events_raw. Each segment's lines are streamed into a temporary table with
// DuckDB's Appender (never row-by-row INSERTs; read_text + string_split ran out of memory on a 64 MiB segment,
// and read_json would lose line numbers and silently skip a damaged line instead of quarantining it), parsed
// there by SQL, loaded in one transaction, and archived only AFTER the commit. A crash at
// any moment loses nothing and duplicates nothing: before the commit nothing is visible and the segment is
// still there; after it, a re-run loads the same segment again and the event_guid key ignores every row.
import { createReadStream } from 'node:fs';
import { upsertSql } from './upsert.ts';
import * as fs from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import type { Store } from './db.ts';
import { fsyncPath } from '../lib/fsync.ts';
import { ARCHIVE_DIR, listClosedSegments } from '../lib/journal-files.ts';
import { sha256Stream } from './landing.ts';
import { sqlTimestamp } from '../lib/utc.ts';
import { dropTemp } from './sql-text.ts';

export interface IngestOptions {
  store: Store;
  journalDir: string;
  /** Where loaded segments are moved. Default <journalDir>/archive. */
  archiveDir?: string;
  now?: () => Date;
  /** Called after a segment's transaction committed and before it is archived (tests simulate a crash here). */
  afterCommit?: (segment: string) => void | Promise<void>;
}

export interface SegmentResult {
  segment: string;
  lines: number;
  /** New events inserted into events_raw. */
  loaded: number;
  /** Valid lines whose event_guid was already stored, or repeated inside the segment. */
  duplicates: number;
  quarantined: number;
  /** Set when the segment could not be loaded; it stays in the journal for the next run. */
  error?: string;
}

export interface IngestResult {
  journalDir: string;
  archiveDir: string;
  segments: SegmentResult[];
  loaded: number;
  duplicates: number;
  quarantined: number;
  failed: number;
}


/** Streams the segment's lines (numbered from 1) into temp._cbp_event_lines_raw with the Appender. */
async function appendLines(store: Store, file: string): Promise<void> {
  await store.run('CREATE OR REPLACE TEMP TABLE _cbp_event_lines_raw (line INTEGER, text VARCHAR)');
  const appender = await store.conn.createAppender('_cbp_event_lines_raw', 'main', 'temp');
  try {
    const rl = createInterface({ input: createReadStream(file, { encoding: 'utf8' }), crlfDelay: Infinity });
    let line = 0;
    for await (const text of rl) {
      line++;
      appender.appendInteger(line);
      appender.appendVarchar(text);
      appender.endRow();
    }
    appender.flushSync();
  } finally {
    appender.closeSync();
  }
}

/**
 * The receiver writes `{"received_at":"...","event":<body as received>}`; the payload is cut out of the line
 * by that shape so it is stored byte for byte as the service sent it (DuckDB's JSON functions would
 * re-serialise it). A line of another shape falls back to the parsed "event" value.
 */
const PARSE_SEGMENT = `
CREATE OR REPLACE TEMP TABLE _cbp_event_lines AS
WITH lines AS (
  SELECT line, text FROM _cbp_event_lines_raw WHERE text <> ''
), j AS (
  SELECT line, text, json_valid(text) AS valid FROM lines
), k AS (
  -- Where the receiver's fixed prefix ends: received_at never contains a quote, so the first '","event":' is it.
  SELECT line, text, valid,
    CASE WHEN valid AND starts_with(text, '{"received_at":"') AND ends_with(text, '}') THEN instr(text, '","event":') ELSE 0 END AS cut
  FROM j
), p AS (
  -- The cut-out text is the event only if it is one JSON value (a line with keys after "event" is not).
  SELECT line, text, valid,
    CASE WHEN cut > 0 AND json_valid(substr(text, cut + 10, length(text) - cut - 10)) THEN substr(text, cut + 10, length(text) - cut - 10) END AS cut_payload,
    CASE WHEN cut > 0 THEN substr(text, 17, cut - 17) END AS cut_received_at
  FROM k
), q AS (
  SELECT
    line, text, valid,
    CASE WHEN cut_payload IS NOT NULL THEN CASE WHEN json_type(cut_payload) = 'OBJECT' THEN cut_payload END
         WHEN valid AND json_type(text, '$.event') = 'OBJECT' THEN json_extract(text, '$.event')::VARCHAR
    END AS payload,
    TRY_CAST(CASE WHEN cut_received_at IS NOT NULL THEN cut_received_at WHEN valid THEN json_extract_string(text, '$.received_at') END AS TIMESTAMPTZ)::TIMESTAMP AS received_at
  FROM p
), f AS (
  -- One parse of the payload for the three envelope fields.
  SELECT line, text, valid, payload, received_at,
    json_extract_string(payload, ['$.event_guid', '$.event_type', '$.event_timestamp']) AS env
  FROM q
), e AS (
  SELECT
    line, text, payload, received_at, valid,
    NULLIF(trim(env[1]), '') AS event_guid,
    NULLIF(trim(env[2]), '') AS event_type,
    TRY_CAST(NULLIF(trim(env[3]), '') AS TIMESTAMPTZ)::TIMESTAMP AS event_timestamp
  FROM f
)
SELECT
  line, payload, received_at, event_guid, event_type, event_timestamp,
  CASE
    WHEN NOT valid THEN 'journal line is not valid JSON (damaged or hand-edited segment)'
    WHEN payload IS NULL THEN 'journal line has no "event" object'
    WHEN received_at IS NULL THEN 'journal line has no valid received_at date-time'
    WHEN event_guid IS NULL AND event_type IS NULL THEN 'event has no event_guid and no event_type'
    WHEN event_guid IS NULL THEN 'event has no event_guid'
    WHEN event_type IS NULL THEN 'event has no event_type'
  END AS reason,
  -- The line itself is kept only for the quarantine: a good line lives on as its payload.
  CASE WHEN reason IS NOT NULL THEN text END AS text
FROM e`;

async function loadSegment(store: Store, file: string, segment: string, now: Date): Promise<SegmentResult> {
  const sha = await sha256Stream(file);
  return store.transaction(async (s) => {
    try {
      await appendLines(s, file);
      await s.run(PARSE_SEGMENT);
      await s.run(dropTemp('TABLE', '_cbp_event_lines_raw'));
      const [c] = await s.all<{ lines: number; bad: number; valid: number; fresh: number }>(`
        SELECT
          count(*)::INTEGER AS lines,
          (count(*) FILTER (WHERE l.reason IS NOT NULL))::INTEGER AS bad,
          (count(*) FILTER (WHERE l.reason IS NULL))::INTEGER AS valid,
          (count(DISTINCT l.event_guid) FILTER (WHERE l.reason IS NULL AND e.event_guid IS NULL))::INTEGER AS fresh
        FROM _cbp_event_lines l LEFT JOIN events_raw e ON e.event_guid = l.event_guid`);
      const at = sqlTimestamp(now);
      await s.run(
        `INSERT INTO quarantine (kind, raw, reason, landing_file, sha256, loaded_at)
         SELECT 'event', l.text, l.reason, $1, $2, $3::TIMESTAMP
         FROM _cbp_event_lines l
         WHERE l.reason IS NOT NULL
           AND NOT EXISTS (SELECT 1 FROM quarantine q WHERE q.kind = 'event' AND q.raw = l.text AND q.reason = l.reason AND q.landing_file = $1)`,
        [segment, sha, at],
      );
      // A re-delivered event keeps its first delivery: the earliest received inside the segment, and
      // anything already stored wins over the segment.
      await s.run(
        upsertSql(s, {
          into: 'events_raw',
          columns: ['event_guid', 'event_type', 'event_timestamp', 'received_at', 'payload', 'segment', 'line', 'loaded_at'],
          rows: `SELECT event_guid, event_type, event_timestamp, received_at, payload::JSON, $1, line, $2::TIMESTAMP
                   FROM _cbp_event_lines
                  WHERE reason IS NULL
                 QUALIFY row_number() OVER (PARTITION BY event_guid ORDER BY received_at, line) = 1`,
          key: ['event_guid'],
        }),
        [segment, at],
      );
      const lines = Number(c.lines);
      const loaded = Number(c.fresh);
      const duplicates = Number(c.valid) - loaded;
      const quarantined = Number(c.bad);
      await s.run(
        upsertSql(s, {
          into: 'event_loads',
          columns: ['segment', 'sha256', 'lines', 'loaded', 'duplicates', 'quarantined', 'loaded_at', 'last_loaded_at', 'load_count'],
          rows: 'VALUES ($1, $2, $3::BIGINT, $4::BIGINT, $5::BIGINT, $6::BIGINT, $7::TIMESTAMP, $7::TIMESTAMP, 1)',
          key: ['segment'],
          set: { last_loaded_at: 'excluded.last_loaded_at', load_count: 'event_loads.load_count + 1' },
        }),
        [segment, sha, lines, loaded, duplicates, quarantined, at],
      );
      return { segment, lines, loaded, duplicates, quarantined };
    } finally {
      await s.run(dropTemp('TABLE', '_cbp_event_lines_raw', '_cbp_event_lines'));
    }
  });
}

/** Loads every sealed segment of journalDir (oldest first) and archives each one after its commit. */
export async function ingestEvents(opts: IngestOptions): Promise<IngestResult> {
  const archiveDir = opts.archiveDir ?? path.join(opts.journalDir, ARCHIVE_DIR);
  const now = opts.now ?? (() => new Date());
  const out: IngestResult = { journalDir: opts.journalDir, archiveDir, segments: [], loaded: 0, duplicates: 0, quarantined: 0, failed: 0 };
  const segments = listClosedSegments(opts.journalDir);
  if (segments.length) fs.mkdirSync(archiveDir, { recursive: true });
  for (const segment of segments) {
    const file = path.join(opts.journalDir, segment);
    let r: SegmentResult;
    try {
      r = await loadSegment(opts.store, file, segment, now());
    } catch (e) {
      // Left in place: nothing of it was committed, the next run tries again.
      out.segments.push({ segment, lines: 0, loaded: 0, duplicates: 0, quarantined: 0, error: (e as Error).message.split('\n')[0] });
      out.failed++;
      continue;
    }
    await opts.afterCommit?.(segment);
    fs.renameSync(file, path.join(archiveDir, segment));
    fsyncPath(archiveDir);
    fsyncPath(opts.journalDir);
    out.segments.push(r);
    out.loaded += r.loaded;
    out.duplicates += r.duplicates;
    out.quarantined += r.quarantined;
  }
  return out;
}
