/**
 * KeptExposition (src/http/kept-exposition.ts): within the stats interval of
 * the last render a request gets that render again without rendering; once
 * the interval has passed (or the clock went back) it renders anew; requests
 * during a render share it; an interval of 0 renders every request; what is
 * left of the interval is what the socket thread may keep the answer for.
 */
import { describe, expect, it } from 'vitest';
import { KeptExposition } from '../../src/http/kept-exposition.js';

/** A render that counts its calls and answers `render N`. */
function countingRender(): { readonly render: () => Promise<string>; readonly calls: () => number } {
  let calls = 0;
  return { render: () => Promise.resolve(`render ${++calls}`), calls: () => calls };
}

describe('an exposition kept for the stats interval', () => {
  it('is given again within the interval and rendered anew after it', async () => {
    let now = 1_000;
    const kept = new KeptExposition<string>(5_000, () => now);
    const { render, calls } = countingRender();
    expect(await kept.get(render)).toBe('render 1');
    now += 4_999;
    expect(await kept.get(render)).toBe('render 1');
    expect(calls()).toBe(1);
    now += 1;
    expect(await kept.get(render)).toBe('render 2');
    expect(await kept.get(render)).toBe('render 2');
    expect(calls()).toBe(2);
  });

  it('says how much of the interval is left for the kept render (0 without one, after it, or when the clock went back)', async () => {
    let now = 1_000;
    const kept = new KeptExposition<string>(5_000, () => now);
    expect(kept.remainingMs()).toBe(0);
    await kept.get(countingRender().render);
    expect(kept.remainingMs()).toBe(5_000);
    now += 4_999;
    expect(kept.remainingMs()).toBe(1);
    now += 1;
    expect(kept.remainingMs()).toBe(0);
    now -= 5_001;
    expect(kept.remainingMs()).toBe(0);
    expect(new KeptExposition<string>(0, () => now).remainingMs()).toBe(0);
  });

  it('renders anew when the clock went back', async () => {
    let now = 10_000;
    const kept = new KeptExposition<string>(5_000, () => now);
    const { render } = countingRender();
    await kept.get(render);
    now -= 1;
    expect(await kept.get(render)).toBe('render 2');
  });

  it('renders every request with an interval of 0', async () => {
    const kept = new KeptExposition<string>(0, () => 0);
    const { render, calls } = countingRender();
    await kept.get(render);
    await kept.get(render);
    expect(calls()).toBe(2);
  });

  it('shares one render between the requests that arrive while it runs; a failed render is not kept', async () => {
    const kept = new KeptExposition<string>(5_000, () => 0);
    let finish: (text: string) => void = () => undefined;
    let calls = 0;
    const slow = (): Promise<string> => { calls++; return new Promise((resolve) => { finish = resolve; }); };
    const first = kept.get(slow);
    const second = kept.get(slow);
    finish('slow render');
    expect(await Promise.all([first, second])).toEqual(['slow render', 'slow render']);
    expect(calls).toBe(1);

    const failing = new KeptExposition<string>(5_000, () => 0);
    await expect(failing.get(() => Promise.reject(new Error('render failed')))).rejects.toThrow('render failed');
    expect(await failing.get(() => Promise.resolve('after the failure'))).toBe('after the failure');
  });
});
