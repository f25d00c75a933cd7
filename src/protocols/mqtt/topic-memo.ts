/**
 * The topic of a connection's last PUBLISH, kept with its bytes: a publisher
 * mostly repeats its topic, and a topic whose bytes equal the last one's is
 * the same string — not decoded again (Buffer.toString crosses into C++ and
 * makes a new string whose hash every Map lookup then computes again), and,
 * once the packet rules accepted it, not checked again (client-packet-rules.ts).
 *
 * Invariant: `topic` is the UTF-8 decoding of the first `length` bytes of
 * `bytes`. `checked` is the topic of the last PUBLISH if it passed the packet
 * rules, and is cleared whenever a topic of other bytes is decoded: a topic
 * equal to it came from the same bytes. (Equal strings alone would not do:
 * a real U+FFFD and bytes that are not UTF-8 decode to the same string.)
 */

/** Longer topics are decoded every time (compared byte by byte, a long topic costs about what decoding it does). */
const topicBytesMax = 128;

export class TopicMemo {
  private readonly bytes = Buffer.alloc(topicBytesMax);
  private length = -1;
  private topic = '';
  /** The last PUBLISH's topic once it passed the packet rules; cleared by a topic of other bytes. */
  checked: string | undefined;

  /** The topic in `packet[start, end)`: the remembered string when the bytes are the same. */
  topicOf(packet: Buffer, start: number, end: number): string {
    const length = end - start;
    const bytes = this.bytes;
    if (length === this.length) {
      let index = 0;
      while (index < length && packet[start + index] === bytes[index]) index++;
      if (index === length) return this.topic;
    }
    const topic = packet.toString('utf8', start, end);
    this.checked = undefined;
    if (length > topicBytesMax) {
      this.length = -1;
      return topic;
    }
    for (let index = 0; index < length; index++) bytes[index] = packet[start + index]!;
    this.length = length;
    this.topic = topic;
    return topic;
  }
}
