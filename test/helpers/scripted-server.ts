// A local HTTP server for client tests that answers each route per attempt from a script (in the manner
// of undici's own tests: destroy the socket, then 500, then 200) and records every request.
import http, { type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RecordedRequest {
  method: string;
  /** Path without the query string. */
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** 1 for the first request to this route, 2 for the second, ... */
  attempt: number;
  /** The body parsed as JSON (undefined when empty). */
  json(): unknown;
}

export type Reply =
  /** Close the connection without answering. */
  | 'destroy'
  /** Never answer (the connection stays open until the server closes). */
  | 'hang'
  /** An answer: an object or array body is sent as JSON, a string or Buffer as is. */
  | { status?: number; headers?: Record<string, string>; body?: unknown }
  /** Full control, e.g. to stream a large body. */
  | ((req: RecordedRequest, res: ServerResponse) => void | Promise<void>);

export interface ScriptedServer {
  /** http://127.0.0.1:<port> */
  url: string;
  requests: RecordedRequest[];
  /** Replies for successive requests to method + path; the last reply repeats. A new script replaces the old. */
  script(method: string, path: string | RegExp, ...replies: Reply[]): void;
  requestsTo(method: string, path: string | RegExp): RecordedRequest[];
  /** Forgets scripts and recorded requests. */
  reset(): void;
  close(): Promise<void>;
}

interface Route {
  method: string;
  path: string | RegExp;
  replies: Reply[];
  count: number;
}

const matches = (p: string | RegExp, path: string) => (typeof p === 'string' ? p === path : p.test(path));

export async function startScriptedServer(): Promise<ScriptedServer> {
  let routes: Route[] = [];
  const requests: RecordedRequest[] = [];

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = (req.url ?? '/').split('?')[0];
      const method = req.method ?? 'GET';
      const route = [...routes].reverse().find((r) => r.method === method && matches(r.path, path));
      const body = Buffer.concat(chunks).toString('utf8');
      const rec: RecordedRequest = {
        method,
        path,
        headers: req.headers,
        body,
        attempt: route ? route.count + 1 : 1,
        json: () => (body.trim() === '' ? undefined : JSON.parse(body)),
      };
      requests.push(rec);
      if (!route) {
        res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: true, message: `no script for ${method} ${path}` }));
        return;
      }
      const reply = route.replies[Math.min(route.count, route.replies.length - 1)];
      route.count++;
      void answer(reply, rec, res);
    });
  });

  async function answer(reply: Reply, rec: RecordedRequest, res: ServerResponse): Promise<void> {
    if (reply === 'destroy') {
      res.socket?.destroy();
      return;
    }
    if (reply === 'hang') return;
    if (typeof reply === 'function') {
      try {
        await reply(rec, res);
      } catch {
        res.destroy();
      }
      return;
    }
    const headers: Record<string, string> = { ...reply.headers };
    let payload: string | Buffer = '';
    if (typeof reply.body === 'string' || Buffer.isBuffer(reply.body)) payload = reply.body;
    else if (reply.body !== undefined) {
      payload = JSON.stringify(reply.body);
      headers['content-type'] ??= 'application/json';
    }
    res.writeHead(reply.status ?? 200, headers).end(payload);
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    script(method, path, ...replies) {
      if (replies.length === 0) throw new Error('script needs at least one reply');
      routes = routes.filter((r) => !(r.method === method && String(r.path) === String(path)));
      routes.push({ method, path, replies, count: 0 });
    },
    requestsTo: (method, path) => requests.filter((r) => r.method === method && matches(path, r.path)),
    reset() {
      routes = [];
      requests.length = 0;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A JWT (unsigned: clients never check the signature) whose payload carries exp, in epoch seconds. */
export function fakeJwt(payload: Record<string, unknown>): string {
  const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
  return `${b64({ alg: 'HS256', typ: 'JWT' })}.${b64(payload)}.c2lnbmF0dXJl`;
}
