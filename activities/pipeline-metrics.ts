// The pipeline gauges (store/pipeline-gauges.ts reads their figures) as prom-client gauges, set as a whole from
// one reading: served by the worker's /metrics and printed by `cbp metrics`. Times are Unix seconds, as
// Prometheus' time() is, so an alert reads `time() - cbp_last_success_timestamp_seconds{workflow="nightly"}`.
import { Gauge, type Registry } from 'prom-client';
import type { PipelineGauges } from '../store/pipeline-gauges.ts';

// What the worker's /metrics reads them with (worker/ reaches the store through activities/ only).
export { readPipelineGauges } from '../store/pipeline-gauges.ts';
export type { Store as GaugeStore } from '../store/db.ts';

const seconds = (iso: string) => Date.parse(iso) / 1000;

export interface PipelineMetrics {
  /** Replaces every pipeline gauge's values with this reading (none: the gauges are emptied). */
  set(g: PipelineGauges | null): void;
}

export function registerPipelineGauges(registry: Registry): PipelineMetrics {
  const r = [registry];
  const lastSuccess = new Gauge({ name: 'cbp_last_success_timestamp_seconds', help: 'When the last successful run of each workflow finished (Unix seconds)', labelNames: ['workflow'], registers: r });
  const coveredTo = new Gauge({ name: 'cbp_covered_to_timestamp_seconds', help: 'The latest instant the loaded data of each report kind covers (covered_to, Unix seconds)', labelNames: ['kind'], registers: r });
  const levels = new Gauge({ name: 'cbp_alert_levels_open', help: 'Series (MID x network x program) at each alert level in their latest month evaluated', labelNames: ['network', 'program', 'level'], registers: r });
  const quarantine = new Gauge({ name: 'cbp_quarantined_rows', help: 'Rows in the quarantine (failed validation, kept with the reason), by report kind', labelNames: ['kind'], registers: r });
  const rejected = new Gauge({ name: 'cbp_rejected_orders', help: 'Orders whose last push the service refused', registers: r });
  const published = new Gauge({ name: 'cbp_snapshot_published', help: "1 when the analysts' snapshot exists, else 0", registers: r });
  const publishedAt = new Gauge({ name: 'cbp_snapshot_published_timestamp_seconds', help: 'When the snapshot was last published (Unix seconds)', registers: r });
  const behind = new Gauge({ name: 'cbp_snapshot_generations_behind', help: 'Store generations (committed writes) the snapshot lacks; NaN when it cannot be told', registers: r });
  const source = new Gauge({ name: 'cbp_pipeline_gauges_source', help: '1 for where the pipeline gauges were read: the store, or the snapshot while a writer holds the store', labelNames: ['source'], registers: r });
  const all = [lastSuccess, coveredTo, levels, quarantine, rejected, published, publishedAt, behind, source];
  return {
    set(g) {
      // Unlabelled gauges read NaN, not 0, when unknown: no store yet, or a lag the snapshot cannot tell.
      for (const x of all) x.reset();
      for (const x of [rejected, published, publishedAt, behind]) x.set(NaN);
      if (!g) return;
      source.set({ source: g.source }, 1);
      for (const s of g.lastSuccess) lastSuccess.set({ workflow: s.workflow }, seconds(s.at));
      for (const c of g.coveredTo) coveredTo.set({ kind: c.kind }, seconds(c.at));
      for (const l of g.alertLevels) levels.set({ network: l.network, program: l.program, level: l.level }, l.series);
      for (const q of g.quarantine) quarantine.set({ kind: q.kind }, q.rows);
      rejected.set(g.rejectedOrders);
      published.set(g.snapshot.exists ? 1 : 0);
      if (g.snapshot.publishedAt) publishedAt.set(seconds(g.snapshot.publishedAt));
      if (g.snapshot.generationsBehind !== null) behind.set(g.snapshot.generationsBehind);
    },
  };
}
