/**
 * MQTT $SYS topics with Mosquitto's names, published every `intervalSeconds`
 * as retained QoS 0 values through MqttCore.publishSystem: in memory only,
 * never records in the log (they describe this process, not broker state).
 * A filter that starts with a wildcard never matches them [MQTT-4.7.2-1];
 * subscribe to `$SYS/#`.
 *
 * As in Mosquitto, a value is published when it changed (uptime every time),
 * `$SYS/broker/version` once, and the load figures are exponentially smoothed
 * per-minute rates over 1, 5 and 15 minutes (sys_tree.c's calc_load).
 *
 * Where Cairn differs: `messages/received` and `messages/sent` count MQTT
 * PUBLISH packets (Mosquitto counts every packet), so they equal
 * `publish/messages/*`; `store/messages/count` is what MQTT sessions and AMQP
 * queues hold for delivery.
 */
import type { Broker } from './core/broker.js';
import type { MetricsTotals } from './metrics.js';

export interface SysSources {
  readonly broker: Broker;
  readonly version: string;
  totals(): MetricsTotals;
  /** Bytes on the MQTT listener, closed connections included. */
  bytes(): { received: number; sent: number };
  readonly clock?: () => number;
}

export interface SysTopicsHandle {
  /** Publish every value now (the timer does it every interval). */
  publishNow(): void;
  stop(): void;
}

const loadWindowsSeconds = [[1, 60], [5, 300], [15, 900]] as const;
const loadCounters = ['messages/received', 'messages/sent', 'publish/received', 'publish/sent', 'bytes/received', 'bytes/sent', 'connections'] as const;
type LoadCounter = (typeof loadCounters)[number];

export function startSysTopics(sources: SysSources, intervalSeconds: number): SysTopicsHandle {
  const clock = sources.clock ?? Date.now;
  const startedAt = clock();
  const published = new Map<string, string>();
  const loads = new Map<string, number>();
  let previous: { at: number; counts: Record<LoadCounter, number> } | undefined;
  let clientsMaximum = 0;
  const encoder = new TextEncoder();

  const publish = (topic: string, value: string, always = false): void => {
    const full = `$SYS/broker/${topic}`;
    if (!always && published.get(full) === value) return;
    published.set(full, value);
    sources.broker.mqtt.publishSystem(full, encoder.encode(value));
  };

  const counts = (): Record<LoadCounter, number> => {
    const totals = sources.totals();
    const bytes = sources.bytes();
    return {
      'messages/received': totals.messagesIn.mqtt, 'messages/sent': totals.messagesOut.mqtt,
      'publish/received': totals.messagesIn.mqtt, 'publish/sent': totals.messagesOut.mqtt,
      'bytes/received': bytes.received, 'bytes/sent': bytes.sent, connections: totals.connectionsOpened.mqtt,
    };
  };

  /** Mosquitto's calc_load: an exponentially smoothed per-minute rate, updated once per interval. */
  const publishLoads = (now: number, current: Record<LoadCounter, number>): void => {
    if (previous !== undefined && now > previous.at) {
      const seconds = (now - previous.at) / 1000;
      for (const counter of loadCounters) {
        const perMinute = ((current[counter] - previous.counts[counter]) * 60) / seconds;
        for (const [minutes, windowSeconds] of loadWindowsSeconds) {
          const key = `load/${counter}/${minutes}min`;
          const exponent = Math.exp(-seconds / windowSeconds);
          const load = perMinute + exponent * ((loads.get(key) ?? perMinute) - perMinute);
          loads.set(key, load);
          publish(key, load.toFixed(2));
        }
      }
    }
    previous = { at: now, counts: current };
  };

  const publishNow = (): void => {
    const { broker } = sources;
    const now = clock();
    let connected = 0;
    let subscriptions = 0;
    let stored = 0;
    for (const session of broker.sessions.values()) {
      if (session.link !== undefined) connected++;
      subscriptions += session.state.subscriptions.size;
      stored += session.state.pending.size;
    }
    for (const queue of broker.queues.values()) stored += queue.readyCount + queue.unacked.size;
    clientsMaximum = Math.max(clientsMaximum, connected);
    const current = counts();
    publish('version', `cairn version ${sources.version}`);
    publish('uptime', `${Math.floor((now - startedAt) / 1000)} seconds`, true);
    publish('clients/connected', String(connected));
    publish('clients/active', String(connected));
    publish('clients/disconnected', String(broker.sessions.size - connected));
    publish('clients/inactive', String(broker.sessions.size - connected));
    publish('clients/total', String(broker.sessions.size));
    publish('clients/maximum', String(clientsMaximum));
    publish('messages/received', String(current['messages/received']));
    publish('messages/sent', String(current['messages/sent']));
    publish('messages/stored', String(stored));
    publish('publish/messages/received', String(current['publish/received']));
    publish('publish/messages/sent', String(current['publish/sent']));
    publish('bytes/received', String(current['bytes/received']));
    publish('bytes/sent', String(current['bytes/sent']));
    publish('store/messages/count', String(stored));
    publish('subscriptions/count', String(subscriptions));
    publish('retained messages/count', String(broker.state.retained.size));
    publishLoads(now, current);
  };

  publishNow();
  const timer = setInterval(publishNow, intervalSeconds * 1000);
  timer.unref();
  return { publishNow, stop: () => clearInterval(timer) };
}
