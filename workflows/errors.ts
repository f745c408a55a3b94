// Errors raised by the orchestration bodies on bad input. None is retryable: the same input fails the same way.
// The Temporal bindings turn them into non-retryable ApplicationFailures typed by their code.
import { CbpError } from '../lib/errors.ts';

// Raised by the day and window helpers themselves (lib/utc.ts), which sit below every layer.
export { WindowRangeError } from '../lib/utc.ts';

/** A webhook URL the service would push events to over plain HTTP (or another scheme). */
export class InsecureWebhookUrlError extends CbpError {
  constructor(url: string) {
    super(
      'CBP_ERR_INSECURE_WEBHOOK_URL',
      `webhook URL ${JSON.stringify(url)} is not https: the service pushes events with Basic credentials, so use an https:// address ` +
        '(plain http is allowed only for a loopback address such as http://127.0.0.1:8080, the local sandbox)',
    );
  }
}

/** Workflow input that is missing or malformed. */
export class WorkflowInputError extends CbpError {
  constructor(message: string) {
    super('CBP_ERR_WORKFLOW_INPUT', message);
  }
}

/** The deepest message of an error chain: Temporal wraps an activity's error as ActivityFailure → cause. */
export function errorMessage(e: unknown): string {
  let cur: unknown = e;
  let msg = '';
  for (let depth = 0; depth < 8 && cur; depth++) {
    if (cur instanceof Error || (typeof cur === 'object' && cur !== null && 'message' in cur)) {
      const m = String((cur as { message?: unknown }).message ?? '');
      if (m) msg = m;
      cur = (cur as { cause?: unknown }).cause;
    } else {
      if (!msg) msg = String(cur);
      break;
    }
  }
  return msg || String(e);
}

/**
 * The stable code of an error chain: a CbpError's `code`, or the `type` of the ApplicationFailure Temporal wraps an
 * activity's error in (worker/activity-errors.ts types it by code). Undefined when none carries one.
 */
export function errorCode(e: unknown): string | undefined {
  let cur: unknown = e;
  for (let depth = 0; depth < 8 && typeof cur === 'object' && cur !== null; depth++) {
    const c = cur as { code?: unknown; type?: unknown; cause?: unknown };
    if (typeof c.code === 'string' && c.code.startsWith('CBP_ERR_')) return c.code;
    if (typeof c.type === 'string' && c.type.startsWith('CBP_ERR_')) return c.type;
    cur = c.cause;
  }
  return undefined;
}
