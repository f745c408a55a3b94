// The notifiers the configuration asks for: each one only when its settings are present.
import type { Config } from '../../lib/config.ts';
import type { Notifier } from './types.ts';
import { log } from '../../lib/log.ts';
import { createWebhookNotifier } from './webhook.ts';
import { createSlackNotifier } from './slack.ts';
import { createEmailNotifier } from './email.ts';

export type { Notifier } from './types.ts';

export function notifiersFromConfig(cfg: Config): Notifier[] {
  const out: Notifier[] = [];
  const s = (k: string) => (typeof cfg[k] === 'string' && (cfg[k] as string).length > 0 ? (cfg[k] as string) : undefined);
  const webhook = s('alertWebhookUrl');
  if (webhook) {
    if (!s('alertWebhookSecret')) log().warn('CBP_ALERT_WEBHOOK_URL is set without CBP_ALERT_WEBHOOK_SECRET: alert webhooks go out unsigned');
    out.push(createWebhookNotifier({ url: webhook, secret: s('alertWebhookSecret') }));
  }
  const slack = s('slackWebhookUrl');
  if (slack) out.push(createSlackNotifier({ url: slack }));
  const smtp = s('smtpUrl');
  const to = s('alertEmailTo');
  if (smtp && to) out.push(createEmailNotifier({ smtpUrl: smtp, from: s('alertEmailFrom') ?? 'cbp@localhost', to }));
  return out;
}
