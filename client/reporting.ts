// The reporting interface: POST {reportingBaseUrl}/chargebacks | /prevention | /mid_report with the
// reporting key as bearer. A report can be large, so its body is streamed to `<dest>.part` and renamed to
// dest once complete: never held in memory, and never a half-written file under the final name.
import { createWriteStream } from 'node:fs';
import { mkdir, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ReportRequestSchema, reportDateTime, ReportKindSchema, type OutputFormat, type ReportKind } from '../contract/index.ts';
import { CbpError } from '../lib/errors.ts';
import { registerSecrets } from '../lib/log.ts';
import { parseOrThrow } from '../lib/validate.ts';
import { bearer, ServiceHttp, type ClientOptions } from './http.ts';

export interface ReportingClientConfig {
  reportingBaseUrl: string;
  reportingKey: string;
  companyToken: string;
}

export const DEFAULT_REPORT_TIMEOUT_MS = 600_000;

export interface ReportRequestArgs {
  kind: ReportKind;
  /** Start of the range: a UTC date-time in either spec spelling (`YYYY-MM-DDTHH:MM:SSZ` or `YYYY-MM-DD HH:MM:SS`). */
  start: string;
  end: string;
  /** Filter by merchant accounts; omitted means all MIDs. */
  mids?: string[];
  /** JSON (the service's default) or CSV. cbp always sends it, JSON when not given. */
  format?: OutputFormat | 'json' | 'csv';
  /** Final file path; the body is written to `<dest>.part` first. */
  dest: string;
  signal?: AbortSignal;
}

export interface ReportDownload {
  path: string;
  bytes: number;
  format: OutputFormat;
  kind: ReportKind;
  /** The range as sent, in ISO 8601 UTC. */
  start: string;
  end: string;
  /** null: all MIDs. */
  mids: string[] | null;
  fetchedAt: string;
  /**
   * The service's clock when it answered: the response's HTTP `Date` header, ISO UTC (whole seconds);
   * undefined when it sent none or an unreadable one. The report holds the data known up to this instant.
   */
  serviceTime?: string;
  /** True for an empty 200 (no bytes, or whitespace only): no data for valid parameters. */
  empty: boolean;
  status: number;
  contentType: string | null;
}

/** The report file cannot be written (disk full, no permission). */
export class ReportWriteError extends CbpError {
  constructor(file: string, cause: unknown) {
    super(
      'CBP_ERR_REPORT_WRITE',
      `cannot write the report to ${file}: ${(cause as Error)?.message ?? String(cause)} — check the folder exists, is writable and has free space (CBP_DATA_DIR)`,
      { cause, details: { file } },
    );
  }
}

export interface ReportingClient {
  fetchReport(args: ReportRequestArgs): Promise<ReportDownload>;
  close(): Promise<void>;
}

/** An HTTP `Date` header as ISO UTC (whole seconds), or undefined when absent or unreadable. */
export function httpDate(raw: string | string[] | undefined): string | undefined {
  const text = Array.isArray(raw) ? raw[0] : raw;
  if (!text) return undefined;
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : new Date(at).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** Counts bytes and watches whether everything so far is whitespace, without holding the data. */
class Meter extends Transform {
  bytes = 0;
  blank = true;
  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    this.bytes += chunk.length;
    if (this.blank) {
      for (let i = 0; i < chunk.length; i++) {
        const c = chunk[i];
        // space, tab, CR, LF, and a UTF-8 BOM's bytes
        if (c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d && c !== 0xef && c !== 0xbb && c !== 0xbf) {
          this.blank = false;
          break;
        }
      }
    }
    cb(null, chunk);
  }
}

export function createReportingClient(
  cfg: ReportingClientConfig,
  opts: ClientOptions & { reportTimeoutMs?: number; now?: () => number } = {},
): ReportingClient {
  registerSecrets([cfg.reportingKey, cfg.companyToken]);
  const http = new ServiceHttp('reporting', cfg.reportingBaseUrl, { ...opts, secrets: () => [cfg.reportingKey, cfg.companyToken] });
  const reportTimeoutMs = opts.reportTimeoutMs ?? DEFAULT_REPORT_TIMEOUT_MS;
  const now = opts.now ?? Date.now;

  return {
    async fetchReport(args) {
      const kind = parseOrThrow(ReportKindSchema, args.kind, 'report kind');
      const req = parseOrThrow(
        ReportRequestSchema,
        {
          start_date: args.start,
          end_date: args.end,
          company_token: cfg.companyToken,
          ...(args.mids !== undefined ? { mids: args.mids } : {}),
          output_format: args.format ?? 'JSON',
        },
        'report request',
      );
      const format = req.output_format ?? 'JSON';
      const body = JSON.stringify({
        start_date: reportDateTime(req.start_date),
        end_date: reportDateTime(req.end_date),
        company_token: cfg.companyToken,
        ...(req.mids !== undefined ? { mids: req.mids } : {}),
        output_format: format,
      });
      const dest = path.resolve(args.dest);
      const part = `${dest}.part`;
      await mkdir(path.dirname(dest), { recursive: true }).catch((e: unknown) => {
        throw new ReportWriteError(part, e);
      });
      try {
        const got = await http.run(
          {
            operation: `fetch ${kind} report`,
            method: 'POST',
            path: `/${kind}`,
            headers: { ...bearer(cfg.reportingKey), accept: format === 'CSV' ? 'text/csv, application/json' : 'application/json' },
            body,
            // A report is a read: asking again returns the same data.
            idempotent: true,
            signal: args.signal,
            timeoutMs: reportTimeoutMs,
            timeoutSetting: 'CBP_REPORT_TIMEOUT_MS',
          },
          async (res) => {
            // Each attempt starts the file afresh ('w' truncates a partial earlier attempt).
            const meter = new Meter();
            const file = createWriteStream(part, { flags: 'w' });
            let fileError: unknown;
            file.once('error', (e) => (fileError = e));
            try {
              await pipeline(res.body, meter, file);
            } catch (e) {
              // A full disk or a folder without write access is not a network failure: no retry.
              if (fileError) throw new ReportWriteError(part, fileError);
              throw e;
            }
            const ct = res.headers['content-type'];
            return {
              status: res.statusCode,
              bytes: meter.bytes,
              empty: meter.blank,
              contentType: (Array.isArray(ct) ? ct[0] : ct) ?? null,
              serviceTime: httpDate(res.headers.date),
            };
          },
        );
        await rename(part, dest);
        return {
          path: dest,
          bytes: got.bytes,
          format,
          kind,
          start: req.start_date,
          end: req.end_date,
          mids: req.mids ?? null,
          fetchedAt: new Date(now()).toISOString().replace(/\.\d{3}Z$/, 'Z'),
          ...(got.serviceTime ? { serviceTime: got.serviceTime } : {}),
          empty: got.empty,
          status: got.status,
          contentType: got.contentType,
        };
      } catch (e) {
        await rm(part, { force: true }).catch(() => undefined);
        throw e;
      }
    },
    close: () => http.close(),
  };
}
