/** MQTT.js clients at protocolVersion 5, for the MQTT 5 tests. */
import mqtt, { type IClientOptions, type MqttClient } from 'mqtt';
import type { IConnackPacket, IPublishPacket } from 'mqtt-packet';

/**
 * A v5 client on 127.0.0.1:`port`, once its CONNACK is in. `received` collects its PUBLISHes from
 * the start: a persistent session's queued messages follow CONNACK at once.
 */
export async function connectMqtt5(port: number, clientId: string, options: IClientOptions = {}, received?: IPublishPacket[]): Promise<{ client: MqttClient; connack: IConnackPacket }> {
  const client = mqtt.connect({ host: '127.0.0.1', port, clientId, protocolVersion: 5, reconnectPeriod: 0, connectTimeout: 5_000, ...options });
  if (received !== undefined) client.on('message', (_topic, _payload, packet) => received.push(packet));
  const connack = await new Promise<IConnackPacket>((resolve, reject) => {
    client.once('connect', resolve);
    client.once('error', reject);
  }).catch((error: unknown) => {
    client.end(true);
    throw error;
  });
  return { client, connack };
}

/** The PUBLISHes a client receives from now on. */
export function collectPublishes(client: MqttClient): IPublishPacket[] {
  const received: IPublishPacket[] = [];
  client.on('message', (_topic, _payload, packet) => received.push(packet));
  return received;
}
