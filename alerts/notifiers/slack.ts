// Slack-compatible incoming webhook: {text, blocks}. Mattermost and Rocket.Chat read the same `text`.
// No chart: an incoming webhook cannot upload a file, and an image block needs a public URL, which cbp does not
// have (and a merchant's figures should not be put on one); the message names the command that draws it
// (docs/spec-decisions.md, "Charts in the alert notices").
import type { Notice } from '../../store/alerts.ts';
import type { Notifier } from './types.ts';
import { postJson } from './http.ts';
import { isPipelineNotice, pipelineDetails } from '../pipeline-notices.ts';
import { secretUrlParts } from '../../lib/urls.ts';

export interface SlackNotifierOptions {
  /** CBP_SLACK_WEBHOOK_URL (a secret: the URL is the credential) */
  url: string;
  name?: string;
  retries?: number;
  backoffMs?: number;
  timeoutMs?: number;
}

const ICON: Record<Notice['kind'], string> = {
  reached: ':rotating_light:', escalated: ':fire:', resolved: ':white_check_mark:', projected: ':crystal_ball:', likely: ':warning:', watch: ':eyes:', unknown: ':grey_question:',
  due: ':hourglass:', pipeline_failed: ':x:', pipeline_recovered: ':white_check_mark:',
};

export function slackMessage(n: Notice): { text: string; blocks: unknown[] } {
  if (isPipelineNotice(n)) {
    const d = pipelineDetails(n);
    const title = `${ICON[n.kind]} ${n.kind === 'pipeline_failed' ? 'Pipeline failed' : 'Pipeline recovered'}: ${d.workflow} [${d.error_code}]`;
    const more = `notice ${n.notice_id}${d.command ? ` · see more: \`${d.command}\`` : ''}`;
    return { text: `${title}\n${n.message}`, blocks: [{ type: 'section', text: { type: 'mrkdwn', text: `${title}\n${n.message}` } }, { type: 'context', elements: [{ type: 'mrkdwn', text: more }] }] };
  }
  if (n.kind === 'due') return { text: `${ICON.due} ${n.message}`, blocks: [{ type: 'section', text: { type: 'mrkdwn', text: `${ICON.due} ${n.message}` } }, { type: 'context', elements: [{ type: 'mrkdwn', text: `notice ${n.notice_id} · open cases: \`cbp disputes due --mid ${n.mid}\`` }] }] };
  const title = `${ICON[n.kind]} ${n.kind === 'projected' ? 'Projected breach' : n.kind === 'likely' ? 'Likely breach' : n.kind[0].toUpperCase() + n.kind.slice(1)}: ${n.network} ${n.program} ${n.level} — ${n.mid} ${n.month}`;
  const text = `${title}\n${n.message}`;
  const fields = [
    `*Ratio*\n${n.ratio_pct === null ? 'no ratio' : `${n.ratio_pct.toFixed(3)} % (${n.ratio_bps?.toFixed(1)} bps)`}${n.is_projection ? ' (projection)' : ''}`,
    `*Figures*\n${n.numerator ?? '-'} / ${n.denominator ?? '-'} (${n.denominator_month ?? '-'})`,
  ];
  return {
    text,
    blocks: [
      { type: 'section', text: { type: 'mrkdwn', text: title } },
      { type: 'section', fields: fields.map((f) => ({ type: 'mrkdwn', text: f })) },
      { type: 'context', elements: [{ type: 'mrkdwn', text: `notice ${n.notice_id} · trend chart: \`cbp report --mid ${n.mid}\`` }] },
    ],
  };
}

/** The hook URL is the credential: the whole URL, its path (workspace, channel, token) and any userinfo. */
export function slackSecrets(url: string): string[] {
  return secretUrlParts(url);
}

export function createSlackNotifier(o: SlackNotifierOptions): Notifier {
  const name = o.name ?? 'slack';
  const secrets = slackSecrets(o.url);
  return {
    name,
    secrets,
    async send(n) {
      await postJson({ notifier: name, url: o.url, body: JSON.stringify(slackMessage(n)), retries: o.retries, backoffMs: o.backoffMs, timeoutMs: o.timeoutMs, secrets });
    },
  };
}
