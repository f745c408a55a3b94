// The client side of test/client-report-large.test.ts, in a process of its own so that the RSS figures are the
// client's alone: downloads the report at argv[2] to argv[3], reads it back record by record, prints what it saw.
import { createReportingClient } from '../../client/reporting.ts';
import { readReportRecords } from '../../client/report-records.ts';
import { createLogger } from '../../lib/log.ts';

/** Samples RSS until stopped; returns the peak growth over the baseline taken at start. */
function rssMonitor(): { stop(): number } {
  const base = process.memoryUsage().rss;
  let peak = base;
  const timer = setInterval(() => { peak = Math.max(peak, process.memoryUsage().rss); }, 10);
  return {
    stop() {
      clearInterval(timer);
      return Math.max(peak, process.memoryUsage().rss) - base;
    },
  };
}

const [url, dest] = process.argv.slice(2) as [string, string];
const rc = createReportingClient(
  { reportingBaseUrl: url, reportingKey: 'large-report-key', companyToken: 'large-company-token' },
  { logger: createLogger({ level: 'silent' }), retry: { retries: 0 } },
);
let mon = rssMonitor();
const got = await rc.fetchReport({ kind: 'chargebacks', start: '2026-01-01T00:00:00Z', end: '2026-11-30T23:59:59Z', dest });
const downloadGrowth = mon.stop();
await rc.close();
mon = rssMonitor();
let count = 0;
let last: Record<string, unknown> | undefined;
for await (const r of readReportRecords(dest, 'chargebacks', 'JSON')) {
  count++;
  last = r;
}
const readGrowth = mon.stop();
process.stdout.write(JSON.stringify({ bytes: got.bytes, empty: got.empty, downloadGrowth, count, lastCase: last?.case_number, readGrowth }));
