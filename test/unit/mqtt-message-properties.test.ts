/**
 * storedPropertiesOf keeps nothing of the incoming PUBLISH's bytes: the decoder's correlation data is a view
 * of the read, and a read's buffer may be reused by the next read (socket-reads.ts lends it).
 */
import { describe, expect, it } from 'vitest';
import { storedPropertiesOf } from '../../src/core/mqtt-message-properties.js';

describe('storedPropertiesOf', () => {
  it('keeps a copy of the correlation data, not a view of the read it came in', () => {
    const read = Buffer.from('xxcorrelation-7yy');
    const stored = storedPropertiesOf({ correlationData: read.subarray(2, 15), contentType: 'text/plain' }, 1_000);
    read.fill(0x41);
    expect(stored?.correlationData).toStrictEqual(new Uint8Array(Buffer.from('correlation-7')));
    expect(stored?.contentType).toBe('text/plain');
  });

  it('keeps nothing for a PUBLISH without properties, or with none it stores', () => {
    expect(storedPropertiesOf(undefined, 0)).toBeUndefined();
    expect(storedPropertiesOf({ userProperties: [] }, 0)).toBeUndefined();
  });
});
