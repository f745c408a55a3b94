// A TCP proxy to a PostgreSQL server that loses a COMMIT's answer: armed, it passes the COMMIT of a transaction that
// wrote a DuckLake snapshot on to the server, then cuts the connection before the answer comes back (the commit was
// applied; the client cannot know). Reads the client's messages of the wire protocol (v3) to find them.
import net from 'node:net';

export interface CommitProxy {
  port: number;
  /** Cut the answer of the nth snapshot commit from now on (1: the next one). */
  arm(nth: number): void;
  /** Commits whose answers were cut so far. */
  readonly cut: number;
  close(): Promise<void>;
}

export async function startCommitProxy(target: number): Promise<CommitProxy> {
  let armedAt = 0;
  let seen = 0;
  let cut = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(target, '127.0.0.1');
    sockets.add(client).add(upstream);
    for (const s of [client, upstream]) s.on('close', () => sockets.delete(s)).on('error', () => undefined);
    let buf = Buffer.alloc(0);
    let started = false;
    let wroteSnapshot = false;
    let dropping = false;
    upstream.on('data', (d) => { if (!dropping) client.write(d); });
    upstream.on('close', () => client.destroy());
    client.on('close', () => upstream.destroy());
    client.on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      // Whole messages only: the untyped start-up ones (SSL request, start-up), then typed ones.
      for (;;) {
        if (!started) {
          if (buf.length < 8) return;
          const len = buf.readInt32BE(0);
          if (buf.length < len) return;
          const code = buf.readInt32BE(4);
          upstream.write(buf.subarray(0, len));
          buf = buf.subarray(len);
          if (code !== 80877103 && code !== 80877104) started = true; // SSLRequest, GSSENCRequest come before start-up
          continue;
        }
        if (buf.length < 5) return;
        const len = buf.readInt32BE(1) + 1;
        if (buf.length < len) return;
        const msg = buf.subarray(0, len);
        buf = buf.subarray(len);
        const text = msg[0] === 0x51 || msg[0] === 0x50 ? msg.subarray(5).toString('utf8') : '';
        if (/INSERT\s+INTO\s+\S*ducklake_snapshot\b/i.test(text)) wroteSnapshot = true;
        upstream.write(msg);
        if (/^\s*COMMIT\b/i.test(text) && wroteSnapshot) {
          wroteSnapshot = false;
          seen++;
          if (armedAt > 0 && seen === armedAt) {
            armedAt = 0;
            cut++;
            dropping = true;
            // The server has the COMMIT; give it a moment to apply it, then cut both ways before its answer is passed on.
            setTimeout(() => { client.destroy(); upstream.destroy(); }, 300);
            return;
          }
        } else if (/^\s*(ROLLBACK|BEGIN)\b/i.test(text)) wroteSnapshot = false;
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    port: (server.address() as net.AddressInfo).port,
    arm(nth) { armedAt = seen + nth; },
    get cut() { return cut; },
    close: () => new Promise<void>((r) => { for (const s of sockets) s.destroy(); server.close(() => r()); }),
  };
}
