// Subscription vetting (the spec's subscription state table): a registration.new POST to the url; an
// answer below 400 activates; otherwise an HTTP OPTIONS test; below 400 activates; if both fail, a
// failure e-mail and 8 more checks spread evenly over the following 24 h of SANDBOX time (every 3 h),
// each failure e-mailed. A success e-mails too. After the 9th failure the subscription stays inactive
// and the e-mail says to delete it and create a new one.
import { sendToWebhook } from './delivery.ts';
import { sendMail, type SandboxState, type StoredSubscription } from './state.ts';

export const VETTING_RETRIES = 8;
export const VETTING_INTERVAL_MS = (24 * 3600_000) / VETTING_RETRIES;

export function registrationPayload(sub: StoredSubscription): Record<string, unknown> {
  return {
    event_guid: sub.guid,
    event_type: 'registration.new',
    subscribed_event_type: sub.event_type,
    event_timestamp: sub.created_at,
  };
}

/** One vetting check (POST, then OPTIONS if needed). Returns true when the subscription was activated. */
export async function vettingCheck(state: SandboxState, sub: StoredSubscription): Promise<boolean> {
  sub.vettingAttempts += 1;
  const n = sub.vettingAttempts;
  const base = { event_guid: sub.guid, event_type: 'registration.new', subscription_guid: sub.guid, url: sub.url, attempt: n };
  const post = await sendToWebhook(sub, 'POST', registrationPayload(sub), state.deliveryTimeoutMs);
  const postOk = 'status' in post && post.status < 400;
  state.deliveries.push({ ...base, method: 'POST', time: state.clock.nowIso(), ...post, outcome: postOk ? 'vetting passed' : 'vetting: trying OPTIONS' });
  let ok = postOk;
  if (!ok) {
    const opt = await sendToWebhook(sub, 'OPTIONS', undefined, state.deliveryTimeoutMs);
    ok = 'status' in opt && opt.status < 400;
    state.deliveries.push({ ...base, method: 'OPTIONS', time: state.clock.nowIso(), ...opt, outcome: ok ? 'vetting passed' : 'vetting failed' });
  }
  // The subscription may have been deleted while the webhook was being tested.
  if (!state.subscriptions.has(sub.guid)) return false;
  const subject = `Subscription ${sub.guid} (${sub.event_type})`;
  if (ok) {
    sub.active = true;
    sub.vetting = 'passed';
    sub.updated_at = state.clock.nowIso();
    sendMail(state, sub.email, `${subject} is active`, `The webhook ${sub.url} answered the registration test. Events of type ${sub.event_type} are now pushed to it.`);
    return true;
  }
  const left = VETTING_RETRIES + 1 - n;
  if (left > 0) {
    sendMail(
      state,
      sub.email,
      `${subject}: webhook test failed`,
      `The webhook ${sub.url} answered the registration test (POST, then OPTIONS) with an error or not at all. ` +
        `The test is repeated ${left} more time${left === 1 ? '' : 's'} over the next 24 hours (check ${n} of ${VETTING_RETRIES + 1}).`,
    );
  } else {
    sub.vetting = 'failed';
    sendMail(
      state,
      sub.email,
      `${subject}: webhook test failed for the last time`,
      `The webhook ${sub.url} failed all ${VETTING_RETRIES + 1} registration tests. The subscription stays inactive: delete it and create a new one.`,
    );
  }
  return false;
}

/** Runs the first check now and, if it fails, schedules the 8 further checks on the sandbox clock. */
export async function startVetting(state: SandboxState, sub: StoredSubscription): Promise<void> {
  if (await vettingCheck(state, sub)) return;
  const created = Date.parse(sub.created_at);
  for (let k = 1; k <= VETTING_RETRIES; k++) {
    state.clock.schedule(created + k * VETTING_INTERVAL_MS, 'vetting retry', async () => {
      const cur = state.subscriptions.get(sub.guid);
      if (!cur || cur !== sub || cur.vetting !== 'pending' || cur.active) return;
      await vettingCheck(state, cur);
    });
  }
}
