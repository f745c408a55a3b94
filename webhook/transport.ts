// Where the receiver may listen: plain http only where no network is crossed, or behind a declared TLS proxy.
import { isIP } from 'node:net';
import { ConfigError } from '../lib/errors.ts';

/** True for an address only this machine reaches: 127.0.0.0/8, ::1, localhost. */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[(.*)\]$/, '$1').toLowerCase();
  if (h === 'localhost' || h.endsWith('.localhost')) return true;
  const v4 = h.startsWith('::ffff:') && isIP(h.slice(7)) === 4 ? h.slice(7) : h;
  if (isIP(v4) === 4) return v4.startsWith('127.');
  if (isIP(h) === 6) return /^(0{0,4}:){7}0{0,3}1$|^::1$/.test(h);
  return false;
}

/**
 * Refuses plain http on an address other than loopback unless a TLS proxy is declared in front: Basic
 * credentials and events would cross the network in clear, and the service pushes to https only anyway.
 */
export function assertTransport(host: string, tls: boolean, behindTlsProxy: boolean): void {
  if (tls || behindTlsProxy || isLoopbackHost(host)) return;
  throw new ConfigError([
    `the receiver would serve plain http on ${host}, which is not a loopback address: its Basic credentials and events would cross the network unencrypted. ` +
      'Serve https (set CBP_WEBHOOK_TLS_CERT and CBP_WEBHOOK_TLS_KEY), or listen on 127.0.0.1 behind a TLS proxy, or, when a TLS proxy in front reaches this address over a network you trust, say so with --behind-tls-proxy (CBP_WEBHOOK_BEHIND_TLS_PROXY=true)',
  ]);
}
