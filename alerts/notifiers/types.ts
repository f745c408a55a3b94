import type { Notice } from '../../store/alerts.ts';

/** The trend chart of the MID × program a notice is about, drawn at delivery time (alerts/notifiers/chart.ts). */
export interface NoticeChart {
  /** the chart as PNG bytes, converted from the SVG `cbp report` draws for the same series */
  png: Buffer;
  /** the PNG's size in pixels (drawn at twice the SVG's CSS size) */
  width: number;
  height: number;
  /** the size to show it at, in CSS pixels (the SVG's) */
  cssWidth: number;
  cssHeight: number;
  /** one sentence saying what the chart shows (alt text, caption) */
  caption: string;
  /** a file name for it: cbp-<mid>-<network>-<program>-<month>.png */
  filename: string;
}

/** What a delivery may add to the notice; each part is asked for only by a notifier that uses it. */
export interface SendContext {
  /** The notice's trend chart, or null when there is none to draw (no figures, a chart that failed: the
   * notice goes without it). Built once per notice and shared by the notifiers. */
  chart?: () => Promise<NoticeChart | null>;
}

/** Something that tells a person or a system about a notice. send() resolves once accepted, else throws. */
export interface Notifier {
  /** stable name: the outbox keys deliveries by (notice_id, name) */
  readonly name: string;
  send(notice: Notice, ctx?: SendContext): Promise<void>;
  /** What this notifier holds that must never be stored or logged (its URL's token, SMTP credentials, ...):
   * the outbox redacts these, with the configured secrets, from every delivery error. */
  readonly secrets?: readonly string[];
  close?(): Promise<void> | void;
}
