/**
 * For tests that show a long HTTP request does not stop other clients: a
 * core link that accepts everything (to write through the core in-process),
 * a real MQTT.js client doing QoS 1 round trips back to back, and what those
 * round trips did while the request ran.
 */
import type { MqttClient } from 'mqtt';
import type { MqttClientLink, MqttOutgoingPublish } from '../../src/core/api.js';

/** An in-process MQTT connection that takes every delivery and never acks. */
export class QuietLink implements MqttClientLink {
  sendPublish(_publish: MqttOutgoingPublish): boolean { return true; }
  sendPubrel(): void {}
  takenOver(): undefined { return undefined; }
  readFailed(error: Error): void { throw error; }
}

/** Round trips back to back until stopped; the time each one completed. */
export function probeRoundTrips(client: MqttClient): { completions: number[]; stop(): Promise<void> } {
  const completions: number[] = [];
  let going = true;
  const loop = (async (): Promise<void> => {
    while (going) {
      await client.publishAsync('probe/ping', 'x', { qos: 1 });
      completions.push(performance.now());
    }
  })();
  return { completions, stop: async () => { going = false; await loop; } };
}

/** The round trips completed between `started` and `ended`, and the longest time without one in that window. */
export function roundTripsDuring(completions: readonly number[], started: number, ended: number): { count: number; longestGapMs: number } {
  const during = completions.filter((time) => time > started && time < ended);
  const marks = [started, ...during, ended];
  const gaps = marks.slice(1).map((time, index) => time - marks[index]!);
  return { count: during.length, longestGapMs: Math.max(...gaps) };
}
