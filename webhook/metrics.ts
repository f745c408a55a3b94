// The receiver's metrics (prom-client, a registry of its own): requests by route and status, the acknowledgement
// latency of accepted pushes (from the request's arrival to the 200, the journal's fsync included), credentials
// refused, open connections, the journal's backlog waiting for ingest and the disk under it. Names and meanings:
// docs/operations.md "Metrics and alerting".
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { diskSpace, journalBacklog, journalReadiness } from '../lib/journal-space.ts';

/** Seconds: an fsync'd push takes a few ms on a local disk, tens on a network one. */
export const ACK_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

export interface ReceiverMetrics {
  registry: Registry;
  /** One answered request: its route (events, healthz, readyz, other) and status. */
  answered(route: string, status: number, seconds: number): void;
  /** A request refused for missing or wrong Basic credentials. */
  refused(): void;
  /** A push accepted with the previous password (a rotation under way). */
  previousPassword(): void;
}

/** The journal gauges every process can read from the folder alone (the receiver, `cbp metrics`). */
export function registerJournalGauges(registry: Registry, journalDir: string, minFreeBytes: number): void {
  new Gauge({
    name: 'cbp_journal_waiting_segments',
    help: 'Sealed journal segments waiting for ingest',
    registers: [registry],
    collect() {
      this.set(journalBacklog(journalDir).segments);
    },
  });
  new Gauge({
    name: 'cbp_journal_waiting_bytes',
    help: 'Bytes of the sealed journal segments waiting for ingest',
    registers: [registry],
    collect() {
      this.set(journalBacklog(journalDir).bytes);
    },
  });
  const disk = (pick: 'freeBytes' | 'sizeBytes') =>
    function (this: Gauge) {
      const d = diskSpace(journalDir);
      if (d) this.set(d[pick]);
    };
  new Gauge({ name: 'cbp_journal_disk_free_bytes', help: 'Bytes free (to a non-root writer) on the file system under the journal', registers: [registry], collect: disk('freeBytes') });
  new Gauge({ name: 'cbp_journal_disk_size_bytes', help: 'Size in bytes of the file system under the journal', registers: [registry], collect: disk('sizeBytes') });
  new Gauge({
    name: 'cbp_journal_ready',
    help: '1 when the journal folder is writable with at least CBP_JOURNAL_MIN_FREE free (a receiver takes events), else 0',
    registers: [registry],
    collect() {
      this.set(journalReadiness(journalDir, minFreeBytes).ready ? 1 : 0);
    },
  });
}

/** A registry with the receiver's metrics, the journal's gauges and Node's process metrics. */
export function createReceiverMetrics(opts: { journalDir: string; minFreeBytes: number; connections?: () => Promise<number> }): ReceiverMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const requests = new Counter({ name: 'cbp_webhook_requests_total', help: 'Requests answered by the receiver, by route and status', labelNames: ['route', 'status'], registers: [registry] });
  const ack = new Histogram({
    name: 'cbp_webhook_ack_seconds',
    help: 'Seconds from a push arriving to its 200, the journal fsync included (accepted pushes only)',
    buckets: ACK_BUCKETS,
    registers: [registry],
  });
  const refused = new Counter({ name: 'cbp_webhook_auth_refused_total', help: 'Requests refused for missing or wrong Basic credentials', registers: [registry] });
  const previous = new Counter({ name: 'cbp_webhook_previous_password_total', help: 'Pushes accepted with CBP_WEBHOOK_PREVIOUS_PASSWORD (a rotation under way)', registers: [registry] });
  const connections = opts.connections;
  if (connections) {
    new Gauge({
      name: 'cbp_webhook_open_connections',
      help: 'Connections open to the receiver now',
      registers: [registry],
      async collect() {
        this.set(await connections());
      },
    });
  }
  registerJournalGauges(registry, opts.journalDir, opts.minFreeBytes);
  return {
    registry,
    answered(route, status, seconds) {
      requests.inc({ route, status: String(status) });
      if (route === 'events' && status === 200) ack.observe(seconds);
    },
    refused: () => refused.inc(),
    previousPassword: () => previous.inc(),
  };
}
