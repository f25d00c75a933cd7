/**
 * The tx class for amqplib clients (benchmarks and tests), which amqplib has
 * no API for: the channel's own rpc, which sends the method and waits for its
 * -ok in order with the channel's other frames.
 */
import type { Channel } from 'amqplib';

/** amqplib names a method by (class id << 16) | method id; the tx class is 90 (its defs module is not exported). */
const txMethod = (methodId: number): number => (90 << 16) | methodId;

interface RpcChannel {
  rpc(method: number, fields: Record<string, never>, expect: number): Promise<unknown>;
}

function rpc(channel: Channel, methodId: number): Promise<unknown> {
  return (channel as unknown as RpcChannel).rpc(txMethod(methodId), {}, txMethod(methodId + 1));
}

export async function txSelect(channel: Channel): Promise<void> {
  await rpc(channel, 10);
}

export async function txCommit(channel: Channel): Promise<void> {
  await rpc(channel, 20);
}

export async function txRollback(channel: Channel): Promise<void> {
  await rpc(channel, 30);
}
