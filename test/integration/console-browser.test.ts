/**
 * The web console in a real browser: Debian's chromium, driven headless by
 * playwright-core, against an in-process Cairn with real AMQP and MQTT
 * clients. The console loads with no console errors, its charts draw after
 * traffic, a queue declared over AMQP appears, browsing it shows the message
 * (and leaves it there), and a trace shows the path of a published message.
 *
 * Never skipped: without /usr/bin/chromium the suite fails saying how to
 * install it (.ci/run does).
 */
import { existsSync } from 'node:fs';
import amqp from 'amqplib';
import mqtt from 'mqtt';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseServeArgs } from '../../src/config.js';
import { silentLogger } from '../../src/logger.js';
import { startCairn, type RunningCairn } from '../../src/server.js';
import { tempDirectory, until } from '../support/kit.js';

const chromiumPath = '/usr/bin/chromium';
const chromiumArgs = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
  '--disable-component-update', '--disable-sync',
];

describe('the web console in headless Chromium', () => {
  const data = tempDirectory('cairn-console-');
  const profile = tempDirectory('cairn-chromium-profile-');
  let cairn: RunningCairn;
  let browser: BrowserContext;
  let page: Page;
  let connection: amqp.ChannelModel;
  const consoleErrors: string[] = [];

  beforeAll(async () => {
    if (!existsSync(chromiumPath)) {
      throw new Error(`${chromiumPath} is missing: the console test drives Debian's chromium — apt-get install -y --no-install-recommends chromium (.ci/run does this)`);
    }
    cairn = await startCairn(parseServeArgs(['--data', data.path, '--mqtt-port', '0', '--amqp-port', '0', '--http-port', '0', '--sys-interval', '0', '--ingest', 'sensors/#:readings'], {}), silentLogger());
    // A fresh profile directory: launchPersistentContext passes it as --user-data-dir.
    browser = await chromium.launchPersistentContext(profile.path, { executablePath: chromiumPath, headless: true, args: chromiumArgs });
    page = browser.pages()[0] ?? await browser.newPage();
    page.on('console', (message) => { if (message.type() === 'error') consoleErrors.push(message.text()); });
    page.on('pageerror', (error) => consoleErrors.push(error.message));
  });
  afterAll(async () => {
    await connection?.close().catch(() => undefined);
    await browser?.close();
    await cairn?.close();
    data.remove();
    profile.remove();
  });

  const base = (): string => `http://127.0.0.1:${cairn.httpPort!}`;
  const text = (selector: string): Promise<string> => page.locator(selector).innerText();

  it('loads with no console errors and shows the overview', async () => {
    await page.goto(`${base()}/`);
    await page.locator('#totals b').first().waitFor();
    expect(await text('#totals')).toContain('next LSN');
    expect(await page.title()).toBe('Cairn');
    expect(consoleErrors).toEqual([]);
  });

  it('draws the charts after traffic', async () => {
    const publisher = await mqtt.connectAsync(`mqtt://127.0.0.1:${cairn.mqttPort!}`, { clientId: 'console-traffic' });
    await publisher.subscribeAsync('sensors/#', { qos: 1 });
    for (let i = 0; i < 50; i++) await publisher.publishAsync(`sensors/room${i % 3}`, JSON.stringify({ value: i }), { qos: 1 });
    await until(async () => Number(await page.locator('#chart-messages').getAttribute('data-max')) > 0, 'the messages chart to draw a rate above 0');
    await until(async () => Number(await page.locator('#chart-fsync').getAttribute('data-max')) > 0, 'the fsync chart to draw a latency');
    await until(async () => Number(await page.locator('#chart-batch').getAttribute('data-max')) >= 1, 'the batch-size chart to draw');
    expect(Number(await page.locator('#chart-connections').getAttribute('data-max'))).toBeGreaterThanOrEqual(1);
    // The canvas holds drawn pixels, not only a data attribute.
    // Runs in the page (this project's TypeScript has no DOM types): the canvas as far as the check needs it.
    type Canvas = { width: number; height: number; getContext(kind: '2d'): { getImageData(x: number, y: number, w: number, h: number): { data: ArrayLike<number> } } };
    const inked = await page.locator('#chart-messages').evaluate((node) => {
      const canvas = node as unknown as Canvas;
      const pixels = canvas.getContext('2d').getImageData(0, 20, canvas.width, canvas.height - 20).data;
      let count = 0;
      for (let i = 3; i < pixels.length; i += 4) if (pixels[i]! > 0) count++;
      return count;
    });
    expect(inked).toBeGreaterThan(100);
    await publisher.endAsync();
    expect(consoleErrors).toEqual([]);
  });

  it('shows a queue declared over AMQP, and browsing it shows the message without consuming it', async () => {
    connection = await amqp.connect(`amqp://127.0.0.1:${cairn.amqpPort!}`);
    const channel = await connection.createConfirmChannel();
    await channel.assertQueue('browser-q', { durable: true });
    channel.sendToQueue('browser-q', Buffer.from('hello from amqp'), { persistent: true, contentType: 'text/plain' });
    await channel.waitForConfirms();
    await page.goto(`${base()}/#queues`);
    const row = page.locator('#queues-table tr', { hasText: 'browser-q' });
    await row.waitFor();
    await row.getByRole('button', { name: 'Browse' }).click();
    await page.locator('#browser-messages', { hasText: 'hello from amqp' }).waitFor();
    expect(await text('#browser-messages')).toContain('text/plain');
    expect(cairn.broker.queues.get('browser-q')?.readyCount).toBe(1);
    expect(consoleErrors).toEqual([]);
  });

  it('traces a published message from the log view: its queue and its delivery', async () => {
    const channel = await connection.createChannel();
    const got = await channel.get('browser-q', { noAck: true });
    expect(got && got.content.toString()).toBe('hello from amqp');
    await cairn.broker.flush();
    await page.goto(`${base()}/#log`);
    await page.locator('#log-form input[name=queue]').fill('browser-q');
    await page.locator('#log-form input[name=kind]').fill('msg');
    await page.locator('#log-form button').click();
    const row = page.locator('#log-records tr', { hasText: 'q:browser-q#' });
    await row.waitFor();
    await row.getByRole('button', { name: 'Trace' }).click();
    await page.locator('#trace-body', { hasText: 'acked' }).waitFor();
    const trace = await text('#trace-body');
    expect(trace).toContain('published');
    expect(trace).toContain('queue browser-q seq 1');
    expect(trace).toContain('delivered');
    expect(consoleErrors).toEqual([]);
  });

  it('finds collection documents with the filter box', async () => {
    await page.goto(`${base()}/#collections`);
    await page.locator('#documents-form select option', { hasText: 'readings' }).waitFor({ state: 'attached' });
    await page.locator('#documents-form input[name=filter]').fill('{"value": {"$gte": 48}}');
    await page.locator('#documents-form button').click();
    await page.locator('#documents tr', { hasText: '"value":49' }).waitFor();
    expect(await page.locator('#documents tbody tr').count()).toBe(2);
    expect(consoleErrors).toEqual([]);
  });
});
