/**
 * Documents stay in the log, so retention must keep them: a collection pins
 * the log from its first document (src/projections/pins.ts), on a real
 * SegmentedLog with tiny segments and no retention window.
 *
 * Retained values fill segments before the documents and after them, with a
 * snapshot after each stretch, so that the anchor snapshot of retention lies
 * after the documents: without the pin, their segments would go. Retention
 * retires the segments before the first document, and every document reads
 * back from the log after it, and again after a restart. (With segment
 * release off: segment-release.test.ts covers documents moved out instead.)
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Broker } from '../../src/core/broker.js';
import { documentSource } from '../../src/core/collection-documents.js';
import { parseIngestRoutes } from '../../src/core/ingest.js';
import { countDocuments, findDocuments } from '../../src/http/collection-query.js';
import { parseQuery } from '../../src/http/query.js';
import { SegmentedLog } from '../../src/log/index.js';
import { silentLogger } from '../../src/logger.js';
import { tempDirectory } from '../support/kit.js';
import { QuietLink } from '../support/responsiveness-probe.js';

const logOptions = { segmentBytesMax: 4096, retentionBytes: 0, logger: silentLogger() } as const;
const ingestRoutes = parseIngestRoutes('docs/#:docs');
const limits = { chunkDocuments: 7, chunkMs: 1000, examinedMax: 1000 };
const documentsTotal = 30;

async function publishAll(broker: Broker, topics: readonly string[], payloadOf: (index: number) => string): Promise<void> {
  const { session, durable } = broker.mqtt.connect(`publisher-${topics[0] ?? ''}`, true, new QuietLink());
  await durable;
  session.start();
  let packetId = 1;
  for (const [index, topic] of topics.entries()) {
    await session.publish({ topic, payload: new TextEncoder().encode(payloadOf(index)), qos: 1, retain: topic.startsWith('fill/'), packetId: packetId++ }).durable;
  }
}

const fillTopics = (prefix: string): string[] => Array.from({ length: 300 }, (_, index) => `fill/${prefix}/${index}`);

describe('retention keeps the segments holding documents', () => {
  let directory: { path: string; remove(): void };
  beforeEach(() => { directory = tempDirectory('cairn-collection-retention-'); });
  afterEach(() => directory.remove());

  it('retires the segments before the first document, and every document reads back, before and after a restart', async () => {
    const log = await SegmentedLog.open({ dir: directory.path, ...logOptions });
    const broker = Broker.open({ log, ingestRoutes, logger: silentLogger(), limits: { releaseSegments: false } });
    await publishAll(broker, fillTopics('before'), () => 'x'.repeat(100));
    await broker.snapshot();
    await publishAll(broker, Array.from({ length: documentsTotal }, (_, index) => `docs/${index}`), (index) => JSON.stringify({ n: index, text: 'y'.repeat(100) }));
    await publishAll(broker, fillTopics('after'), () => 'z'.repeat(100));
    await broker.snapshot();
    await publishAll(broker, fillTopics('later'), () => 'w'.repeat(100));
    const references = [...broker.state.collections.get('docs')!.documents.values()];
    expect(references).toHaveLength(documentsTotal);

    await broker.snapshot();
    // Something was retired (the segments of the first retained values), but nothing from the first document on.
    expect(log.firstLsn).toBeGreaterThan(1);
    expect(log.firstLsn).toBeLessThanOrEqual(references[0]!);
    await expectEveryDocument(broker);
    await log.close();

    const reopened = await SegmentedLog.open({ dir: directory.path, ...logOptions });
    const restarted = Broker.open({ log: reopened, ingestRoutes, logger: silentLogger(), limits: { releaseSegments: false } });
    expect(restarted.recovery!.snapshotLsn).toBeGreaterThan(0);
    await expectEveryDocument(restarted);
    await reopened.close();
  });
});

async function expectEveryDocument(broker: Broker): Promise<void> {
  const source = documentSource(broker.log, broker.state.collections.get('docs')!, broker.log.nextLsn - 1);
  const found = await findDocuments(source, parseQuery({ sort: { n: 1 }, projection: { n: 1, _id: 0 } }), limits);
  expect(found).toEqual({ examined: documentsTotal, partial: false, documents: Array.from({ length: documentsTotal }, (_, n) => ({ n })) });
  expect(await countDocuments(source, parseQuery({ filter: { text: 'y'.repeat(100) } }), limits)).toEqual({ count: documentsTotal, examined: documentsTotal, partial: false });
}
