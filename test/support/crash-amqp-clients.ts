/**
 * amqplib clients for crash tests, whose broker is SIGKILLed under them:
 * connections that never throw on the reset, closes bounded in time, and a
 * publisher that keeps a window of unconfirmed persistent messages in flight
 * and records what it sent and what was confirmed.
 */
import amqp, { type ChannelModel, type ConfirmChannel } from 'amqplib';

export const closeTimeoutMs = 500;

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Closing a connection to a dead broker can hang or reject: bound it and swallow the outcome. */
export async function closeQuietly(model: ChannelModel): Promise<void> {
  await Promise.race([model.close().catch(() => undefined), sleep(closeTimeoutMs)]);
}

/** A connection closed quietly by `cleanups` (the test's afterEach list). */
export async function connectQuietly(port: number, cleanups: Array<() => Promise<void> | void>): Promise<ChannelModel> {
  // TCP_NODELAY: with Nagle on, a basic.get after an ack waits ~40 ms for the ack's TCP ACK.
  const model = await amqp.connect(`amqp://127.0.0.1:${port}`, { noDelay: true });
  // After a SIGKILL the socket resets: the 'error' event must not become an uncaught exception.
  model.on('error', () => undefined);
  cleanups.push(() => closeQuietly(model));
  return model;
}

export interface Worker { stop(): void; readonly done: Promise<void> }

/** Publishes unique persistent bodies `${tag}-m${i}` to `queue` until stopped, keeping at most `windowMax` unconfirmed. */
export function startPublisher(
  channel: ConfirmChannel, queue: string, tag: string, windowMax: number, record: { readonly sent: Set<string>; readonly confirmed: Set<string> },
): Worker {
  let stopped = false;
  let inFlight = 0;
  let wake: (() => void) | undefined;
  const done = (async () => {
    for (let i = 0; !stopped; i++) {
      const body = `${tag}-m${i}`;
      record.sent.add(body);
      inFlight++;
      try {
        channel.sendToQueue(queue, Buffer.from(body), { persistent: true }, (error: unknown) => {
          inFlight--;
          if (error === null || error === undefined) record.confirmed.add(body);
          wake?.();
        });
      } catch {
        return; // the channel is closed: the broker is gone
      }
      while (inFlight >= windowMax && !stopped) {
        await new Promise<void>((resolve) => { wake = resolve; setTimeout(resolve, 50); });
      }
    }
  })();
  return { stop: () => { stopped = true; wake?.(); }, done };
}
