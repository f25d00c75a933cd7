/**
 * Methods a client may legitimately send that Cairn does not implement. They
 * are refused with 540 NOT_IMPLEMENTED and a text saying what to use instead,
 * never accepted silently.
 */

export const supportedSummary =
  'supported: exchange.declare/delete/bind/unbind (direct, fanout, topic, headers), queue.declare/bind/unbind/purge/delete, basic.*, confirm.select, tx.select/commit/rollback';
