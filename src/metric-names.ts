/**
 * The names of Cairn's Prometheus metrics: RabbitMQ's prometheus plugin's
 * names for what both brokers have, cairn_* for what only Cairn has.
 */
/** Exported so tests and dashboards agree on them. */
export const metricNames = {
  // Only Cairn has these.
  buildInfo: 'cairn_build_info',
  fsyncs: 'cairn_log_fsyncs_total',
  fsyncSeconds: 'cairn_log_fsync_seconds',
  batchRecords: 'cairn_log_batch_records',
  recordsAppended: 'cairn_log_records_appended_total',
  logNextLsn: 'cairn_log_next_lsn',
  logDurableLsn: 'cairn_log_durable_lsn',
  logFirstLsn: 'cairn_log_first_lsn',
  logBytes: 'cairn_log_bytes',
  logSegments: 'cairn_log_segments',
  logDamagedSegments: 'cairn_log_damaged_segments',
  logUnrestorableLsns: 'cairn_log_unrestorable_lsns',
  logHistoryChecked: 'cairn_log_history_checked',
  snapshotSeconds: 'cairn_snapshot_seconds',
  replaySeconds: 'cairn_recovery_replay_seconds',
  recordsReplayed: 'cairn_recovery_records_replayed',
  drops: 'cairn_messages_dropped_total',
  droppedHeld: 'cairn_destination_dropped_messages',
  mqttSessions: 'cairn_mqtt_sessions',
  sessionPending: 'cairn_mqtt_session_pending_messages',
  sessionInflight: 'cairn_mqtt_session_inflight_messages',
  collectionDocuments: 'cairn_collection_documents',
  accessDenied: 'cairn_access_denied_total',
  // RabbitMQ's names for what both have.
  identityInfo: 'rabbitmq_identity_info',
  messagesReceived: 'rabbitmq_global_messages_received_total',
  messagesDelivered: 'rabbitmq_global_messages_delivered_total',
  globalConsumers: 'rabbitmq_global_consumers',
  connections: 'rabbitmq_connections',
  connectionsOpened: 'rabbitmq_connections_opened_total',
  connectionsClosed: 'rabbitmq_connections_closed_total',
  channels: 'rabbitmq_channels',
  consumers: 'rabbitmq_consumers',
  queues: 'rabbitmq_queues',
  queueMessagesReady: 'rabbitmq_queue_messages_ready',
  queueMessagesUnacked: 'rabbitmq_queue_messages_unacked',
  queueMessages: 'rabbitmq_queue_messages',
  queueConsumers: 'rabbitmq_queue_consumers',
  channelConsumers: 'rabbitmq_channel_consumers',
  channelMessagesUnacked: 'rabbitmq_channel_messages_unacked',
} as const;
