/**
 * An MQTT.js client on a persistent session (clean_session=0), as the crash and failover tests use it:
 * `received` collects payloads from the first packet on (a session's queue follows CONNACK at once, so
 * the handler is there before it), and `cleanups` gets the client's end.
 */
import mqtt from 'mqtt';

export async function connectPersistentSession(port: number, clientId: string, cleanups: Array<() => Promise<void> | void>, received: string[] = []): Promise<mqtt.MqttClient> {
  const client = mqtt.connect({ host: '127.0.0.1', port, clientId, clean: false, reconnectPeriod: 0, protocolVersion: 4 });
  client.on('message', (_topic, payload) => received.push(payload.toString()));
  cleanups.push(() => client.endAsync(true));
  await new Promise<void>((resolve, reject) => {
    client.once('connect', () => resolve());
    client.once('error', reject);
  });
  client.on('error', () => undefined);
  return client;
}
