/**
 * Every AMQP 0-9-1 method Cairn speaks, described once as data: its name,
 * ids and argument list in wire order, straight from amqp0-9-1.extended.xml
 * plus RabbitMQ's extensions (exchange.bind/unbind, basic.nack,
 * confirm.select, connection.blocked/unblocked/update-secret). methods.ts
 * drives both encoding and decoding from this table, and the TypeScript types
 * of decoded methods are derived from it, so the three cannot disagree.
 *
 * Field names are the XML's in camelCase, with two deliberate exceptions:
 *  - connection.close and channel.close carry "class-id"/"method-id" of the
 *    failing method; they are `failedClassId`/`failedMethodId` here because
 *    every decoded method already has `classId`/`methodId` of its own.
 *  - Reserved and deprecated arguments (ticket, out-of-band, capabilities,
 *    insist, known-hosts, channel-id, cluster-id) have the name `null`: they
 *    are skipped on decode and written as zero/empty on encode, as the spec
 *    requires ("reserved ... must be zero/empty, the server MUST ignore").
 */
import { CLASS_ID, METHOD_ID } from './spec.js';

/** Argument domains as they appear on the wire (spec 4.2.5). */
export type MethodFieldType = 'octet' | 'short' | 'long' | 'longlong' | 'shortstr' | 'longstr' | 'bit' | 'table';

/** [name, type]; a `null` name marks a reserved argument. */
export type MethodFieldSpec = readonly [name: string | null, type: MethodFieldType];

export interface MethodDefinition {
  readonly name: string;
  readonly classId: number;
  readonly methodId: number;
  /** True for the methods followed by a content header and body frames (spec 4.2.6). */
  readonly hasContent?: true;
  readonly fields: readonly MethodFieldSpec[];
}

const C = CLASS_ID;
const M = METHOD_ID;

const CONNECTION_METHODS = [
  { name: 'connection.start', classId: C.CONNECTION, methodId: M.CONNECTION.START, fields: [
    ['versionMajor', 'octet'], ['versionMinor', 'octet'], ['serverProperties', 'table'],
    ['mechanisms', 'longstr'], ['locales', 'longstr']] },
  { name: 'connection.start-ok', classId: C.CONNECTION, methodId: M.CONNECTION.START_OK, fields: [
    ['clientProperties', 'table'], ['mechanism', 'shortstr'], ['response', 'longstr'], ['locale', 'shortstr']] },
  { name: 'connection.secure', classId: C.CONNECTION, methodId: M.CONNECTION.SECURE, fields: [
    ['challenge', 'longstr']] },
  { name: 'connection.secure-ok', classId: C.CONNECTION, methodId: M.CONNECTION.SECURE_OK, fields: [
    ['response', 'longstr']] },
  { name: 'connection.tune', classId: C.CONNECTION, methodId: M.CONNECTION.TUNE, fields: [
    ['channelMax', 'short'], ['frameMax', 'long'], ['heartbeat', 'short']] },
  { name: 'connection.tune-ok', classId: C.CONNECTION, methodId: M.CONNECTION.TUNE_OK, fields: [
    ['channelMax', 'short'], ['frameMax', 'long'], ['heartbeat', 'short']] },
  { name: 'connection.open', classId: C.CONNECTION, methodId: M.CONNECTION.OPEN, fields: [
    ['virtualHost', 'shortstr'], [null, 'shortstr'], [null, 'bit']] },
  { name: 'connection.open-ok', classId: C.CONNECTION, methodId: M.CONNECTION.OPEN_OK, fields: [
    [null, 'shortstr']] },
  { name: 'connection.close', classId: C.CONNECTION, methodId: M.CONNECTION.CLOSE, fields: [
    ['replyCode', 'short'], ['replyText', 'shortstr'], ['failedClassId', 'short'], ['failedMethodId', 'short']] },
  { name: 'connection.close-ok', classId: C.CONNECTION, methodId: M.CONNECTION.CLOSE_OK, fields: [] },
  { name: 'connection.blocked', classId: C.CONNECTION, methodId: M.CONNECTION.BLOCKED, fields: [
    ['reason', 'shortstr']] },
  { name: 'connection.unblocked', classId: C.CONNECTION, methodId: M.CONNECTION.UNBLOCKED, fields: [] },
  { name: 'connection.update-secret', classId: C.CONNECTION, methodId: M.CONNECTION.UPDATE_SECRET, fields: [
    ['newSecret', 'longstr'], ['reason', 'shortstr']] },
  { name: 'connection.update-secret-ok', classId: C.CONNECTION, methodId: M.CONNECTION.UPDATE_SECRET_OK, fields: [] },
] as const satisfies readonly MethodDefinition[];

const CHANNEL_METHODS = [
  { name: 'channel.open', classId: C.CHANNEL, methodId: M.CHANNEL.OPEN, fields: [[null, 'shortstr']] },
  { name: 'channel.open-ok', classId: C.CHANNEL, methodId: M.CHANNEL.OPEN_OK, fields: [[null, 'longstr']] },
  { name: 'channel.flow', classId: C.CHANNEL, methodId: M.CHANNEL.FLOW, fields: [['active', 'bit']] },
  { name: 'channel.flow-ok', classId: C.CHANNEL, methodId: M.CHANNEL.FLOW_OK, fields: [['active', 'bit']] },
  { name: 'channel.close', classId: C.CHANNEL, methodId: M.CHANNEL.CLOSE, fields: [
    ['replyCode', 'short'], ['replyText', 'shortstr'], ['failedClassId', 'short'], ['failedMethodId', 'short']] },
  { name: 'channel.close-ok', classId: C.CHANNEL, methodId: M.CHANNEL.CLOSE_OK, fields: [] },
] as const satisfies readonly MethodDefinition[];

const EXCHANGE_METHODS = [
  { name: 'exchange.declare', classId: C.EXCHANGE, methodId: M.EXCHANGE.DECLARE, fields: [
    [null, 'short'], ['exchange', 'shortstr'], ['type', 'shortstr'], ['passive', 'bit'], ['durable', 'bit'],
    ['autoDelete', 'bit'], ['internal', 'bit'], ['noWait', 'bit'], ['arguments', 'table']] },
  { name: 'exchange.declare-ok', classId: C.EXCHANGE, methodId: M.EXCHANGE.DECLARE_OK, fields: [] },
  { name: 'exchange.delete', classId: C.EXCHANGE, methodId: M.EXCHANGE.DELETE, fields: [
    [null, 'short'], ['exchange', 'shortstr'], ['ifUnused', 'bit'], ['noWait', 'bit']] },
  { name: 'exchange.delete-ok', classId: C.EXCHANGE, methodId: M.EXCHANGE.DELETE_OK, fields: [] },
  { name: 'exchange.bind', classId: C.EXCHANGE, methodId: M.EXCHANGE.BIND, fields: [
    [null, 'short'], ['destination', 'shortstr'], ['source', 'shortstr'], ['routingKey', 'shortstr'],
    ['noWait', 'bit'], ['arguments', 'table']] },
  { name: 'exchange.bind-ok', classId: C.EXCHANGE, methodId: M.EXCHANGE.BIND_OK, fields: [] },
  { name: 'exchange.unbind', classId: C.EXCHANGE, methodId: M.EXCHANGE.UNBIND, fields: [
    [null, 'short'], ['destination', 'shortstr'], ['source', 'shortstr'], ['routingKey', 'shortstr'],
    ['noWait', 'bit'], ['arguments', 'table']] },
  { name: 'exchange.unbind-ok', classId: C.EXCHANGE, methodId: M.EXCHANGE.UNBIND_OK, fields: [] },
] as const satisfies readonly MethodDefinition[];

const QUEUE_METHODS = [
  { name: 'queue.declare', classId: C.QUEUE, methodId: M.QUEUE.DECLARE, fields: [
    [null, 'short'], ['queue', 'shortstr'], ['passive', 'bit'], ['durable', 'bit'], ['exclusive', 'bit'],
    ['autoDelete', 'bit'], ['noWait', 'bit'], ['arguments', 'table']] },
  { name: 'queue.declare-ok', classId: C.QUEUE, methodId: M.QUEUE.DECLARE_OK, fields: [
    ['queue', 'shortstr'], ['messageCount', 'long'], ['consumerCount', 'long']] },
  { name: 'queue.bind', classId: C.QUEUE, methodId: M.QUEUE.BIND, fields: [
    [null, 'short'], ['queue', 'shortstr'], ['exchange', 'shortstr'], ['routingKey', 'shortstr'],
    ['noWait', 'bit'], ['arguments', 'table']] },
  { name: 'queue.bind-ok', classId: C.QUEUE, methodId: M.QUEUE.BIND_OK, fields: [] },
  { name: 'queue.purge', classId: C.QUEUE, methodId: M.QUEUE.PURGE, fields: [
    [null, 'short'], ['queue', 'shortstr'], ['noWait', 'bit']] },
  { name: 'queue.purge-ok', classId: C.QUEUE, methodId: M.QUEUE.PURGE_OK, fields: [['messageCount', 'long']] },
  { name: 'queue.delete', classId: C.QUEUE, methodId: M.QUEUE.DELETE, fields: [
    [null, 'short'], ['queue', 'shortstr'], ['ifUnused', 'bit'], ['ifEmpty', 'bit'], ['noWait', 'bit']] },
  { name: 'queue.delete-ok', classId: C.QUEUE, methodId: M.QUEUE.DELETE_OK, fields: [['messageCount', 'long']] },
  // queue.unbind has no no-wait bit: the spec makes it always synchronous.
  { name: 'queue.unbind', classId: C.QUEUE, methodId: M.QUEUE.UNBIND, fields: [
    [null, 'short'], ['queue', 'shortstr'], ['exchange', 'shortstr'], ['routingKey', 'shortstr'],
    ['arguments', 'table']] },
  { name: 'queue.unbind-ok', classId: C.QUEUE, methodId: M.QUEUE.UNBIND_OK, fields: [] },
] as const satisfies readonly MethodDefinition[];

const BASIC_METHODS = [
  { name: 'basic.qos', classId: C.BASIC, methodId: M.BASIC.QOS, fields: [
    ['prefetchSize', 'long'], ['prefetchCount', 'short'], ['global', 'bit']] },
  { name: 'basic.qos-ok', classId: C.BASIC, methodId: M.BASIC.QOS_OK, fields: [] },
  { name: 'basic.consume', classId: C.BASIC, methodId: M.BASIC.CONSUME, fields: [
    [null, 'short'], ['queue', 'shortstr'], ['consumerTag', 'shortstr'], ['noLocal', 'bit'], ['noAck', 'bit'],
    ['exclusive', 'bit'], ['noWait', 'bit'], ['arguments', 'table']] },
  { name: 'basic.consume-ok', classId: C.BASIC, methodId: M.BASIC.CONSUME_OK, fields: [['consumerTag', 'shortstr']] },
  { name: 'basic.cancel', classId: C.BASIC, methodId: M.BASIC.CANCEL, fields: [
    ['consumerTag', 'shortstr'], ['noWait', 'bit']] },
  { name: 'basic.cancel-ok', classId: C.BASIC, methodId: M.BASIC.CANCEL_OK, fields: [['consumerTag', 'shortstr']] },
  { name: 'basic.publish', classId: C.BASIC, methodId: M.BASIC.PUBLISH, hasContent: true, fields: [
    [null, 'short'], ['exchange', 'shortstr'], ['routingKey', 'shortstr'], ['mandatory', 'bit'],
    ['immediate', 'bit']] },
  { name: 'basic.return', classId: C.BASIC, methodId: M.BASIC.RETURN, hasContent: true, fields: [
    ['replyCode', 'short'], ['replyText', 'shortstr'], ['exchange', 'shortstr'], ['routingKey', 'shortstr']] },
  { name: 'basic.deliver', classId: C.BASIC, methodId: M.BASIC.DELIVER, hasContent: true, fields: [
    ['consumerTag', 'shortstr'], ['deliveryTag', 'longlong'], ['redelivered', 'bit'], ['exchange', 'shortstr'],
    ['routingKey', 'shortstr']] },
  { name: 'basic.get', classId: C.BASIC, methodId: M.BASIC.GET, fields: [
    [null, 'short'], ['queue', 'shortstr'], ['noAck', 'bit']] },
  { name: 'basic.get-ok', classId: C.BASIC, methodId: M.BASIC.GET_OK, hasContent: true, fields: [
    ['deliveryTag', 'longlong'], ['redelivered', 'bit'], ['exchange', 'shortstr'], ['routingKey', 'shortstr'],
    ['messageCount', 'long']] },
  { name: 'basic.get-empty', classId: C.BASIC, methodId: M.BASIC.GET_EMPTY, fields: [[null, 'shortstr']] },
  { name: 'basic.ack', classId: C.BASIC, methodId: M.BASIC.ACK, fields: [
    ['deliveryTag', 'longlong'], ['multiple', 'bit']] },
  { name: 'basic.reject', classId: C.BASIC, methodId: M.BASIC.REJECT, fields: [
    ['deliveryTag', 'longlong'], ['requeue', 'bit']] },
  { name: 'basic.recover-async', classId: C.BASIC, methodId: M.BASIC.RECOVER_ASYNC, fields: [['requeue', 'bit']] },
  { name: 'basic.recover', classId: C.BASIC, methodId: M.BASIC.RECOVER, fields: [['requeue', 'bit']] },
  { name: 'basic.recover-ok', classId: C.BASIC, methodId: M.BASIC.RECOVER_OK, fields: [] },
  { name: 'basic.nack', classId: C.BASIC, methodId: M.BASIC.NACK, fields: [
    ['deliveryTag', 'longlong'], ['multiple', 'bit'], ['requeue', 'bit']] },
] as const satisfies readonly MethodDefinition[];

const CONFIRM_AND_TX_METHODS = [
  { name: 'confirm.select', classId: C.CONFIRM, methodId: M.CONFIRM.SELECT, fields: [['noWait', 'bit']] },
  { name: 'confirm.select-ok', classId: C.CONFIRM, methodId: M.CONFIRM.SELECT_OK, fields: [] },
  { name: 'tx.select', classId: C.TX, methodId: M.TX.SELECT, fields: [] },
  { name: 'tx.select-ok', classId: C.TX, methodId: M.TX.SELECT_OK, fields: [] },
  { name: 'tx.commit', classId: C.TX, methodId: M.TX.COMMIT, fields: [] },
  { name: 'tx.commit-ok', classId: C.TX, methodId: M.TX.COMMIT_OK, fields: [] },
  { name: 'tx.rollback', classId: C.TX, methodId: M.TX.ROLLBACK, fields: [] },
  { name: 'tx.rollback-ok', classId: C.TX, methodId: M.TX.ROLLBACK_OK, fields: [] },
] as const satisfies readonly MethodDefinition[];

export const METHOD_DEFINITIONS = [
  ...CONNECTION_METHODS,
  ...CHANNEL_METHODS,
  ...EXCHANGE_METHODS,
  ...QUEUE_METHODS,
  ...BASIC_METHODS,
  ...CONFIRM_AND_TX_METHODS,
] as const;
