// Errors of alert delivery (CBP_ERR_NOTIFY_RETRYABLE, CBP_ERR_NOTIFY_REJECTED). A notifier failure is recorded
// in the outbox and retried later; it never stops the other notifiers.
import { CbpError } from '../lib/errors.ts';

export class NotifyError extends CbpError {
  constructor(notifier: string, message: string, retryable: boolean, opts: { cause?: unknown; status?: number } = {}) {
    super(
      retryable ? 'CBP_ERR_NOTIFY_RETRYABLE' : 'CBP_ERR_NOTIFY_REJECTED',
      `${notifier}: ${message}`,
      { cause: opts.cause, details: { notifier, ...(opts.status ? { httpStatus: opts.status } : {}) } },
    );
  }
}
