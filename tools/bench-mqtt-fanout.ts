/**
 * The fan-out case of bench.js mqtt: one publisher, many live clean
 * subscribers on the same topic, messages delivered per second across all
 * subscribers. Every subscriber must get every message: the result counts
 * what each one received and says how many messages and subscribers fell
 * short, so a rate of what arrived is never mistaken for one of a complete
 * delivery.
 *
 * The publisher pipelines, but keeps at most `windowMessages` published and
 * not yet received by the slowest subscriber: below both brokers' per-client
 * queue bounds (Mosquitto's max_queued_messages is 1,000 by default, Cairn's
 * clean session holds 4,096), so neither drops and the rate is that of a
 * pipeline that delivers everything. A subscriber receives one publisher's
 * messages on one topic in order ([MQTT-4.6.0-6] for QoS 1; QoS 0 over one
 * connection too), so its count is also the index of the next message it waits for.
 */
import mqtt, { type MqttClient } from 'mqtt';

export const fanOutSubscribers = 50;
export const fanOutMessages = 1000;
export const fanOutWindowMessages = 500;
const defaultStallMs = 5_000;
const payload = Buffer.alloc(100, 0x62);

export interface FanOutOptions {
  readonly subscribers?: number;
  readonly messages?: number;
  readonly windowMessages?: number;
  /** The case ends when nothing arrived for this long (a broker that dropped messages). */
  readonly stallMs?: number;
}

export interface FanOut {
  /** Deliveries per second, over all subscribers. */
  readonly rate: number;
  readonly delivered: number;
  /** Subscribers × messages. */
  readonly expected: number;
  /** Subscribers that received fewer than every message. */
  readonly shortSubscribers: number;
  readonly subscribers: number;
  readonly seconds: number;
}

/**
 * Tracks per-subscriber counts and, in O(1) per delivery, how many messages every subscriber has
 * received (the slowest subscriber's count): `reached[n]` is how many subscribers have received at least n.
 */
export class FanOutTally {
  readonly counts: Int32Array;
  private readonly reached: Int32Array;
  private everyone = 0;
  delivered = 0;

  constructor(readonly subscribers: number, readonly messages: number) {
    this.counts = new Int32Array(subscribers);
    this.reached = new Int32Array(messages + 2);
  }

  /** Messages every subscriber has received. */
  get receivedByAll(): number { return this.everyone; }

  get complete(): boolean { return this.everyone >= this.messages; }

  receive(subscriber: number): void {
    const count = ++this.counts[subscriber]!;
    this.delivered++;
    if (count <= this.messages && ++this.reached[count]! === this.subscribers) {
      while (this.everyone < this.messages && this.reached[this.everyone + 1] === this.subscribers) this.everyone++;
    }
  }

  /** Subscribers that received fewer than every message. */
  shortSubscribers(): number {
    return this.counts.reduce((short, count) => (count < this.messages ? short + 1 : short), 0);
  }
}

/** How the table shows a fan-out result: the rate, and what was delivered of what was expected. */
export function fanOutCell(result: FanOut): string {
  const rate = `${Math.round(result.rate).toLocaleString('en-US')} msg/s`;
  const short = result.shortSubscribers === 0 ? '' : `, ${result.shortSubscribers} of ${result.subscribers} subscribers short`;
  return `${rate} (rcvd ${result.delivered}/${result.expected}${short})`;
}

function connect(port: number, clientId: string): Promise<MqttClient> {
  return mqtt.connectAsync({ host: '127.0.0.1', port, clientId, clean: true, reconnectPeriod: 0, connectTimeout: 10_000 });
}

/** One publisher → `subscribers` live clean subscribers of `topic`, each subscribed at `qos`; the publisher publishes at `qos` too. */
export async function fanOut(port: number, topic: string, qos: 0 | 1, options: FanOutOptions = {}): Promise<FanOut> {
  const subscriberCount = options.subscribers ?? fanOutSubscribers;
  const messages = options.messages ?? fanOutMessages;
  const windowMessages = options.windowMessages ?? fanOutWindowMessages;
  const stallMs = options.stallMs ?? defaultStallMs;
  const subscribers = await Promise.all(Array.from({ length: subscriberCount }, (_, i) => connect(port, `bench-fan-${topic}-${i}`)));
  const publisher = await connect(port, `bench-fanpub-${topic}`);
  // Un-awaited publishes each wait for 'drain' on a full socket: as many listeners as publishes in flight.
  publisher.stream.setMaxListeners(windowMessages + 2);
  const tally = new FanOutTally(subscriberCount, messages);
  try {
    await Promise.all(subscribers.map((subscriber) => subscriber.subscribeAsync(topic, { qos })));
    let lastAt = performance.now();
    /** Wakes the publisher (room in its window) or the end of the case (every message everywhere). */
    let progressed: (() => void) | undefined;
    subscribers.forEach((subscriber, i) => subscriber.on('message', () => {
      tally.receive(i);
      lastAt = performance.now();
      progressed?.();
    }));
    const started = performance.now();
    lastAt = started;
    /** Resolves true on progress, false when nothing arrived for stallMs. */
    const nextProgress = (): Promise<boolean> => new Promise<boolean>((resolvePromise) => {
      const timer = setInterval(() => {
        if (performance.now() - lastAt > stallMs) { progressed = undefined; clearInterval(timer); resolvePromise(false); }
      }, 100);
      progressed = () => { progressed = undefined; clearInterval(timer); resolvePromise(true); };
    });
    let stalled = false;
    publishing: for (let i = 0; i < messages; i++) {
      while (i - tally.receivedByAll >= windowMessages) {
        if (!(await nextProgress())) { stalled = true; break publishing; }
      }
      publisher.publish(topic, payload, { qos });
    }
    while (!stalled && !tally.complete) stalled = !(await nextProgress());
    const seconds = (lastAt - started) / 1000;
    return {
      rate: tally.delivered / seconds,
      delivered: tally.delivered,
      expected: subscriberCount * messages,
      shortSubscribers: tally.shortSubscribers(),
      subscribers: subscriberCount,
      seconds,
    };
  } finally {
    for (const subscriber of subscribers) subscriber.end(true);
    publisher.end(true);
  }
}
