/**
 * KeptAnswers and keptAnswerKey (src/http/kept-answers.js), what the HTTP
 * listener's socket thread gives again without the broker's thread: an answer
 * is given while its time lasts and never after; at most `entriesMax` are
 * kept, the oldest dropped first, expired ones before that; only a GET is
 * keyed, and two requests share a key exactly when their target,
 * Accept-Encoding and Authorization values are the same.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { KeptAnswers, keptAnswerKey } from '../../src/http/kept-answers.js';
import { announceSeed } from '../support/kit.js';

fc.configureGlobal({ seed: announceSeed('kept answer keys') });

const answer = (text: string): { status: number; headers: Record<string, string>; body: Buffer } => ({ status: 200, headers: { 'Content-Type': 'text/plain' }, body: Buffer.from(text) });

describe('answers kept on the socket thread', () => {
  it('gives an answer while its time lasts and not after', () => {
    let now = 100;
    const kept = new KeptAnswers(() => now);
    kept.keep('a', answer('one'), 50);
    now += 49;
    expect(kept.get('a')?.body.toString()).toBe('one');
    now += 1;
    expect(kept.get('a')).toBeUndefined();
    expect(kept.size).toBe(0);
  });

  it('keeps nothing for no time, and a newer answer replaces the older one for the same key', () => {
    let now = 0;
    const kept = new KeptAnswers(() => now);
    kept.keep('a', answer('never'), 0);
    expect(kept.get('a')).toBeUndefined();
    kept.keep('a', answer('first'), 10);
    now += 5;
    kept.keep('a', answer('second'), 10);
    now += 9;
    expect(kept.get('a')?.body.toString()).toBe('second');
    expect(kept.size).toBe(1);
  });

  it('holds at most entriesMax answers: expired ones go first, then the oldest', () => {
    let now = 0;
    const kept = new KeptAnswers(() => now, 2);
    kept.keep('short', answer('s'), 1);
    kept.keep('b', answer('b'), 100);
    now += 1;
    kept.keep('c', answer('c'), 100);
    expect(kept.get('short')).toBeUndefined();
    expect(kept.get('b')?.body.toString()).toBe('b');
    kept.keep('d', answer('d'), 100);
    expect(kept.get('b')).toBeUndefined();
    expect(kept.get('c')?.body.toString()).toBe('c');
    expect(kept.get('d')?.body.toString()).toBe('d');
    expect(kept.size).toBe(2);
  });

  it('keys only a GET, and not one with a header given twice', () => {
    expect(keptAnswerKey('GET', '/metrics', {})).toBeTypeOf('string');
    expect(keptAnswerKey('HEAD', '/metrics', {})).toBeUndefined();
    expect(keptAnswerKey('POST', '/metrics', {})).toBeUndefined();
    expect(keptAnswerKey('GET', undefined, {})).toBeUndefined();
    expect(keptAnswerKey('GET', '/metrics', { 'accept-encoding': ['gzip', 'br'] as unknown as string })).toBeUndefined();
  });

  it('gives two GETs one key exactly when their target, Accept-Encoding and Authorization are the same', () => {
    // Node's parser admits no NUL in a target or a header value; the key separates the three with one. A small
    // alphabet makes equal values, and a value moved from one field to the next, common.
    const value = fc.oneof(fc.constantFrom('', 'a', 'ab', 'gzip'), fc.string({ maxLength: 6 }).filter((text) => !text.includes('\0')));
    const request = fc.record({ url: value, encoding: fc.option(value, { nil: undefined }), authorization: fc.option(value, { nil: undefined }) });
    fc.assert(fc.property(request, request, (a, b) => {
      const key = ({ url, encoding, authorization }: typeof a): string | undefined => keptAnswerKey('GET', url, {
        ...(encoding === undefined ? {} : { 'accept-encoding': encoding }), ...(authorization === undefined ? {} : { authorization }),
      });
      const same = a.url === b.url && (a.encoding ?? '') === (b.encoding ?? '') && (a.authorization ?? '') === (b.authorization ?? '');
      expect(key(a) === key(b)).toBe(same);
    }));
  });
});
