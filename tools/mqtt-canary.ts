/**
 * A well-behaved MQTT client (MQTT.js, unmodified) that proves a broker still
 * serves others while something else is attacking it: it subscribes to its own
 * topic at QoS 1, and each round trip publishes one QoS 1 message, awaits its
 * PUBACK and awaits receiving it back. `runInBackground()` keeps doing that
 * until `stop()`, counting round trips and remembering the first failure.
 */
import mqtt, { type MqttClient } from 'mqtt';

export class MqttCanary {
  roundTrips = 0;
  /** The first round trip that failed or took longer than roundTripMsMax, if any. */
  failure: Error | undefined;
  private sent = 0;
  private readonly waiting = new Map<string, () => void>();
  private looping: Promise<void> | undefined;
  private stopping = false;

  private constructor(
    private readonly client: MqttClient,
    private readonly topic: string,
    private readonly roundTripMsMax: number,
  ) {
    client.on('message', (_topic, payload) => {
      const key = payload.toString();
      this.waiting.get(key)?.();
      this.waiting.delete(key);
    });
  }

  static async connect(port: number, options: { clientId?: string; roundTripMsMax?: number } = {}): Promise<MqttCanary> {
    const clientId = options.clientId ?? `canary-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
    const client = mqtt.connect(`mqtt://127.0.0.1:${port}`, { clientId, protocolVersion: 4, reconnectPeriod: 0, connectTimeout: 5_000 });
    await new Promise<void>((resolve, reject) => {
      client.once('connect', () => resolve());
      client.once('error', reject);
    });
    const topic = `canary/${clientId}`;
    await client.subscribeAsync(topic, { qos: 1 });
    return new MqttCanary(client, topic, options.roundTripMsMax ?? 5_000);
  }

  /** One QoS 1 publish, its PUBACK, and its delivery back to us, within roundTripMsMax. */
  async roundTrip(): Promise<void> {
    const key = `${this.sent++}`;
    const received = new Promise<void>((resolve) => this.waiting.set(key, resolve));
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`canary round trip ${key} took over ${this.roundTripMsMax} ms`)), this.roundTripMsMax);
    });
    try {
      await Promise.race([Promise.all([this.client.publishAsync(this.topic, key, { qos: 1 }), received]), timeout]);
      this.roundTrips += 1;
    } finally {
      clearTimeout(timer);
      this.waiting.delete(key);
    }
  }

  /** Round trips one after another until stop() or the first failure. */
  runInBackground(): void {
    this.looping = (async () => {
      while (!this.stopping && this.failure === undefined) {
        try {
          await this.roundTrip();
        } catch (error: unknown) {
          this.failure = error instanceof Error ? error : new Error(String(error));
        }
        // Let the attackers have the event loop between round trips.
        await new Promise((resolve) => setImmediate(resolve));
      }
    })();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await this.looping;
    await this.client.endAsync();
  }
}
