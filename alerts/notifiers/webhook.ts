// Generic webhook: the notice as a JSON body, signed with HMAC-SHA256 over the exact body bytes.
// Headers: X-Cbp-Signature: sha256=<hex>, Idempotency-Key / X-Cbp-Notice-Id: the notice id, so a
// receiver can drop a repeat after a crash between its 200 and our record of it. The notice's trend chart rides
// in the body as a base64 PNG (`chart`, null when there is none), signed with the rest.
import { createHmac } from 'node:crypto';
import type { Notice } from '../../store/alerts.ts';
import type { NoticeChart, Notifier } from './types.ts';
import { postJson } from './http.ts';
import { secretUrlParts } from '../../lib/urls.ts';
import { isPipelineNotice, pipelineDetails } from '../pipeline-notices.ts';

export interface WebhookNotifierOptions {
  url: string;
  /** CBP_ALERT_WEBHOOK_SECRET; without it the body is sent unsigned */
  secret?: string;
  name?: string;
  retries?: number;
  backoffMs?: number;
  timeoutMs?: number;
}

export const SIGNATURE_HEADER = 'x-cbp-signature';
export const IDEMPOTENCY_HEADER = 'idempotency-key';

export function sign(body: string, secret: string): string {
  return `sha256=${createHmac('sha256', secret).update(body, 'utf8').digest('hex')}`;
}

/** The chart as the webhook body carries it. */
export interface WebhookChart {
  content_type: 'image/png';
  encoding: 'base64';
  filename: string;
  width: number;
  height: number;
  caption: string;
  data: string;
}

function webhookChart(c: NoticeChart | null | undefined): WebhookChart | null {
  if (!c) return null;
  return { content_type: 'image/png', encoding: 'base64', filename: c.filename, width: c.width, height: c.height, caption: c.caption, data: c.png.toString('base64') };
}

/** The JSON body a webhook receives. */
export function webhookBody(n: Notice, chart?: NoticeChart | null): string {
  return JSON.stringify({
    type: 'cbp.alert',
    notice_id: n.notice_id,
    kind: n.kind,
    is_projection: n.is_projection,
    mid: n.mid,
    network: n.network,
    program: n.program,
    level: n.level,
    previous_level: n.previous_level,
    month: n.month,
    month_to_date: n.is_partial,
    metric: n.metric,
    ratio: n.ratio,
    ratio_pct: n.ratio_pct,
    ratio_bps: n.ratio_bps,
    numerator: n.numerator,
    denominator: n.denominator,
    denominator_month: n.denominator_month,
    rule_id: n.rule_id,
    comparison: n.comparison,
    ratio_threshold: n.ratio_threshold,
    message: n.message,
    created_at: n.created_at,
    // a due notice's case (alerts/due.ts)
    ...(n.case_number ? { case_number: n.case_number, due_date: n.due_date } : {}),
    chart: webhookChart(chart),
    // A pipeline notice: the workflow, its error code, the run and the command that shows more.
    ...(isPipelineNotice(n) ? pipelineDetails(n) : {}),
  });
}

/**
 * The webhook URL as a secret URL (a Zapier, Discord or Teams hook carries its token in the path: the URL, its
 * token path, userinfo and query values), and the signing key.
 */
export function webhookSecrets(url: string, secret?: string): string[] {
  return [...secretUrlParts(url), ...(secret ? [secret] : [])];
}

export function createWebhookNotifier(o: WebhookNotifierOptions): Notifier {
  const name = o.name ?? 'webhook';
  const secrets = webhookSecrets(o.url, o.secret);
  return {
    name,
    secrets,
    async send(n, ctx) {
      const body = webhookBody(n, await ctx?.chart?.());
      const headers: Record<string, string> = { [IDEMPOTENCY_HEADER]: n.notice_id, 'x-cbp-notice-id': n.notice_id };
      if (o.secret) headers[SIGNATURE_HEADER] = sign(body, o.secret);
      await postJson({ notifier: name, url: o.url, body, headers, retries: o.retries, backoffMs: o.backoffMs, timeoutMs: o.timeoutMs, secrets });
    },
  };
}
