import type { Notice } from '../engine.ts';

/** Something that tells a person or a system about a notice. send() resolves once accepted, else throws. */
export interface Notifier {
  /** stable name: the outbox keys deliveries by (notice_id, name) */
  readonly name: string;
  send(notice: Notice): Promise<void>;
  close?(): Promise<void> | void;
}
