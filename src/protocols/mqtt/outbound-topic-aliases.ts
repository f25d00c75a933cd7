/**
 * MQTT 5 topic aliases the broker sets up towards a client [MQTT-3.3.2.3.4]:
 * when the client's CONNECT announced a Topic Alias Maximum above 0, an
 * outgoing PUBLISH carries an alias; the first time with its topic (which
 * binds the alias), then with an empty topic [MQTT-3.3.2-1]. Never more than
 * the client's maximum [MQTT-3.3.2-10]. With every alias taken, the least
 * recently used one is bound to the new topic (the client's side follows,
 * since a PUBLISH with topic and alias rebinds it). They live as long as the
 * connection [MQTT-3.3.2-7]. A PUBLISH that is not sent after all (larger
 * than the client accepts) unbinds its topic here, so the next one names it.
 *
 * Invariant: `aliasOf` holds at most `aliasMax` topics, each with its own
 * alias in 1…aliasMax, never shared; a Map's insertion order is the recency order (least
 * recent first), refreshed on each use.
 */
import { assert } from '../../assert.js';

/** How a PUBLISH names its topic on the wire. */
export interface TopicOnWire {
  /** The topic name, or '' when the alias stands for it. */
  readonly topic: string;
  readonly alias: number;
}

export class OutboundTopicAliases {
  private readonly aliasOf = new Map<string, number>();
  /** Aliases given up by `forget`, used again before new ones. */
  private readonly unbound: number[] = [];
  /** The lowest alias never given out yet. */
  private nextAlias = 1;

  constructor(readonly aliasMax: number) {
    assert(Number.isInteger(aliasMax) && aliasMax >= 1 && aliasMax <= 0xffff, `topic alias maximum ${aliasMax} out of range`);
  }

  /** The topic and alias for the next PUBLISH to `topic`; call only once the PUBLISH is certain to be written. */
  use(topic: string): TopicOnWire {
    const known = this.aliasOf.get(topic);
    if (known !== undefined) {
      // Most recently used goes last.
      this.aliasOf.delete(topic);
      this.aliasOf.set(topic, known);
      return { topic: '', alias: known };
    }
    let alias = this.unbound.pop();
    if (alias === undefined && this.nextAlias <= this.aliasMax) alias = this.nextAlias++;
    if (alias === undefined) {
      const [leastRecent, reused] = this.aliasOf.entries().next().value as [string, number];
      this.aliasOf.delete(leastRecent);
      alias = reused;
    }
    this.aliasOf.set(topic, alias);
    return { topic, alias };
  }

  /** The PUBLISH that `use` was for was not sent after all: the topic is named again next time. */
  forget(topic: string): void {
    const alias = this.aliasOf.get(topic);
    if (alias === undefined) return;
    this.aliasOf.delete(topic);
    this.unbound.push(alias);
  }
}
