/** `cairn serve --log nats://…/stream`: the address of a JetStream log (src/log/jetstream/jetstream-address.ts). */
import { describe, expect, it } from 'vitest';
import { isJetStreamAddress, parseJetStreamAddress } from '../../src/log/jetstream/jetstream-address.js';

describe('the JetStream log address', () => {
  it('names the servers (4222 when no port is given) and the stream', () => {
    expect(parseJetStreamAddress('nats://a.example:4333,b.example,10.0.0.3:4222/cairn')).toEqual({ servers: ['a.example:4333', 'b.example:4222', '10.0.0.3:4222'], stream: 'cairn', tls: false });
    expect(parseJetStreamAddress('tls://[::1]:5222,[::2]/log_1')).toEqual({ servers: ['[::1]:5222', '[::2]:4222'], stream: 'log_1', tls: true });
  });

  it('tells an address from a data directory', () => {
    expect(isJetStreamAddress('nats://h/s')).toBe(true);
    expect(isJetStreamAddress('./data')).toBe(false);
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
