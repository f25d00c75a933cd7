/**
 * MQTT 5 topic aliases a client sets up towards the broker [MQTT-3.3.2.3.4]:
 * a PUBLISH with a topic and an alias binds the alias to the topic; a PUBLISH
 * with an empty topic and an alias means the bound topic. They live as long
 * as the connection [MQTT-3.3.2-7]. At most `aliasMax` (announced in CONNACK)
 * exist, so the map is bounded.
 */
import { MqttProtocolError } from './errors.js';
import { ReasonCode } from './reason-codes.js';

export class InboundTopicAliases {
  private readonly topics = new Map<number, string>();

  constructor(readonly aliasMax: number) {}

  /** The topic a PUBLISH stands for; throws the spec's DISCONNECT reason for a bad alias. */
  resolve(topic: string, alias: number | undefined): string {
    if (alias === undefined) return topic;
    if (alias === 0 || alias > this.aliasMax) {
      // [MQTT-3.3.2-9] above the announced maximum; 0 is never valid [MQTT-3.3.2-8].
      throw new MqttProtocolError(`topic alias ${alias} is outside 1..${this.aliasMax} [MQTT-3.3.2-9]`, 'protocol-violation', 'publish', ReasonCode.topicAliasInvalid);
    }
    if (topic.length > 0) {
      this.topics.set(alias, topic);
      return topic;
    }
    const bound = this.topics.get(alias);
    if (bound === undefined) {
      throw new MqttProtocolError(`topic alias ${alias} used before it was set [MQTT-3.3.4]`, 'protocol-violation', 'publish', ReasonCode.protocolError);
    }
    return bound;
  }
}
