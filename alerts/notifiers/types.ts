import type { Notice } from '../engine.ts';

/** Something that tells a person or a system about a notice. send() resolves once accepted, else throws. */
export interface Notifier {
  /** stable name: the outbox keys deliveries by (notice_id, name) */
  readonly name: string;
  send(notice: Notice): Promise<void>;
  /** What this notifier holds that must never be stored or logged (its URL's token, SMTP credentials, ...):
   * the outbox redacts these, with the configured secrets, from every delivery error. */
  readonly secrets?: readonly string[];
  close?(): Promise<void> | void;
}
