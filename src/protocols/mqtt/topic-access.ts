/**
 * What one MQTT client may do with topics, under the ACL file (--acl): the
 * only object the MQTT front end asks. SUBSCRIBE asks maySubscribe (a refused
 * filter gets 0x80 in SUBACK), PUBLISH and the will ask mayPublish (a refused
 * message is dropped, still acknowledged: MQTT 3.1.1 has no negative ack), and
 * the core asks mayRead for every delivery. Each refusal is counted.
 *
 * The rules are looked up at every check (AclSource.current()), so a reload
 * on SIGHUP applies to connected clients at once.
 */
import type { AclSource } from '../../auth/acl-file.js';
import { aclAllows, type AclAction, type AclClient } from '../../auth/topic-acl.js';
import type { MqttTopicReader } from '../../core/api.js';

export interface MqttTopicAccess extends MqttTopicReader {
  mayPublish(topic: string): boolean;
  maySubscribe(filter: string): boolean;
}

/** Told of every refusal (metrics). */
export type AccessDeniedListener = (action: AclAction) => void;

/** No ACL file: every client may do everything (authentication still applies). */
export const unrestrictedTopicAccess: MqttTopicAccess = {
  mayPublish: () => true,
  maySubscribe: () => true,
  mayRead: () => true,
};

export function topicAccessFor(acl: AclSource, client: AclClient, denied: AccessDeniedListener | undefined): MqttTopicAccess {
  const check = (action: AclAction, subject: string): boolean => {
    const allowed = aclAllows(acl.current(), client, action, subject);
    if (!allowed) denied?.(action);
    return allowed;
  };
  return {
    mayPublish: (topic) => check('write', topic),
    maySubscribe: (filter) => check('subscribe', filter),
    mayRead: (topic) => check('read', topic),
  };
}
