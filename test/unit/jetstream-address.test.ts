/** `cairn serve --log nats://…/stream`: the address of a JetStream log (src/log/jetstream/jetstream-address.ts) and its flags (src/config.ts). */
import { describe, expect, it } from 'vitest';
import { parseServeArgs } from '../../src/config.js';
import { parseJetStreamAddress } from '../../src/log/jetstream/jetstream-address.js';

describe('the JetStream log address', () => {
  it('names the servers (4222 when no port is given) and the stream', () => {
    expect(parseJetStreamAddress('nats://a.example:4333,b.example,10.0.0.3:4222/cairn')).toEqual({ servers: ['a.example:4333', 'b.example:4222', '10.0.0.3:4222'], stream: 'cairn', tls: false });
    expect(parseJetStreamAddress('tls://[::1]:5222,[::2]/log_1')).toEqual({ servers: ['[::1]:5222', '[::2]:4222'], stream: 'log_1', tls: true });
  });

  it('refuses an address without a stream, a bad stream name or a bad host, naming it', () => {
    for (const [text, message] of [
      ['nats://host:4222', /nats:\/\/host:port/],
      ['nats://host/a.b', /stream name "a.b"/],
      ['nats://ho st/s', /"ho st" .* is not host\[:port\]/],
      ['http://host/s', /nats:\/\/host:port/],
    ] as const) {
      expect(() => parseJetStreamAddress(text)).toThrow(message);
    }
  });
});

describe('cairn serve --log, --nats-creds, --lease-ttl', () => {
  it('the file log stays the default; --log names the JetStream log, with a 5 s lease by default', () => {
    expect(parseServeArgs([], {}).logAddress).toBeUndefined();
    const config = parseServeArgs(['--log', 'nats://n1:4222,n2:4222/cairn', '--nats-creds', 'cairn.creds'], {});
    expect(config.logAddress).toEqual({ servers: ['n1:4222', 'n2:4222'], stream: 'cairn', tls: false });
    expect(config.natsCredsFile).toBe('cairn.creds');
    expect(config.leaseTtlMs).toBe(5000);
    expect(parseServeArgs([], { CAIRN_LOG: 'nats://n1/s', CAIRN_LEASE_TTL: '3s' })).toMatchObject({ logAddress: { stream: 's' }, leaseTtlMs: 3000 });
  });

  it('refuses a bad address and a lease shorter than a second, naming the flag', () => {
    expect(() => parseServeArgs(['--log', 'nats://n1:4222'], {})).toThrow(/--log/);
    expect(() => parseServeArgs(['--log', 'nats://n1/s', '--lease-ttl', '500ms'], {})).toThrow(/--lease-ttl.*at least 1000 ms/);
  });
});
