// A loopback port nobody holds right now, for a server that must be told its port before it binds (the Temporal
// dev server, the Temporal SDK's metrics exporter).
import { createServer, type AddressInfo } from 'node:net';

/** A port free on 127.0.0.1 right now (the OS picks it; the server binds it a moment later). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
