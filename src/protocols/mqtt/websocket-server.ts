/**
 * MQTT over WebSocket [MQTT-6.0] (ws://, and wss:// with TLS credentials),
 * the listener browsers and MQTT.js's `ws://host:port/mqtt` reach. The
 * upgrade must ask for the path (/mqtt) and offer the subprotocol `mqtt`
 * [MQTT-6.0.0-3], which the answer names [MQTT-6.0.0-4]. Each WebSocket then
 * becomes a stream (websocket-stream.ts) for the very MqttConnection a TCP
 * client gets: same sessions, same handlers, same limits, same ACL.
 *
 * Plain HTTP requests on this port get 426 Upgrade Required and the
 * connection is closed, so nothing but WebSockets stays open here.
 */
import { createServer as createHttpServer, type IncomingMessage } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { Duplex } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import { WebSocketServer } from 'ws';
import { serveConnections } from '../tcp-listener.js';
import { WebSocketStream } from '../websocket-stream.js';
import { MqttConnection } from './connection.js';
import { mqttConnectionContext, type MqttServer, type MqttServerOptions } from './server.js';

export const mqttWebSocketPath = '/mqtt';
const mqttSubprotocol = 'mqtt';

/** A frame may hold a whole packet and a bit of the next one; beyond this the WebSocket is closed (1009). */
const frameBytesSlack = 64 * 1024;

interface AcceptedWebSocket {
  readonly stream: WebSocketStream;
  readonly identity: string | undefined;
}

export async function startMqttWebSocketServer(options: MqttServerOptions): Promise<MqttServer> {
  const context = mqttConnectionContext(options);
  const { tls } = options;
  const { logger } = context;
  const name = tls === undefined ? 'MQTT over WebSocket' : 'MQTT over secure WebSocket';
  const server = tls === undefined ? createHttpServer() : createHttpsServer(tls.serverOptions());
  const webSockets = new WebSocketServer({
    noServer: true,
    perMessageDeflate: false,
    maxPayload: context.limits.packetBytesMax + frameBytesSlack,
    handleProtocols: (offered) => (offered.has(mqttSubprotocol) ? mqttSubprotocol : false),
  });
  server.on('request', (_request, response) => {
    response.writeHead(426, { 'content-type': 'text/plain', connection: 'close', upgrade: 'websocket' });
    response.end(`MQTT over WebSocket: connect to ws${tls ? 's' : ''}://HOST:PORT${mqttWebSocketPath} with the subprotocol '${mqttSubprotocol}'\n`);
  });
  return serveConnections<MqttConnection, AcceptedWebSocket>({
    protocol: 'mqtt', name, server, host: options.host, port: options.port, connectionsMax: context.limits.connectionsMax, logger,
    connectionEvents: options.connectionEvents, describe: { path: mqttWebSocketPath, anonymous: context.users.size === 0, acl: context.acl !== undefined }, tls,
    accept: (accepted, closed) => new MqttConnection(accepted.stream, context, closed, accepted.identity),
    shutdown: (connection) => connection.close('server-closing'),
  }, (admit) => {
    server.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => {
      const refusal = upgradeRefusal(request);
      if (refusal !== undefined) {
        logger.debug({ remote: request.socket.remoteAddress, url: request.url?.slice(0, 128), refusal }, `${name} upgrade refused`);
        socket.end(`HTTP/1.1 ${refusal}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
        return;
      }
      const tlsSocket = request.socket as TLSSocket;
      if (tls !== undefined && !tls.admits(tlsSocket)) {
        logger.debug({ remote: request.socket.remoteAddress }, `${name} client certificate does not verify: closing`);
        socket.destroy();
        return;
      }
      webSockets.handleUpgrade(request, socket, head, (webSocket) => {
        const stream = new WebSocketStream(webSocket, request.socket);
        admit({ stream, identity: tls?.identityOf(tlsSocket) }, () => webSocket.terminate());
      });
    });
  });
}

/** Why an upgrade request is refused (an HTTP status line), or undefined to accept it. */
function upgradeRefusal(request: IncomingMessage): string | undefined {
  const path = (request.url ?? '').split('?')[0];
  if (path !== mqttWebSocketPath) return '404 Not Found';
  const offered = (request.headers['sec-websocket-protocol'] ?? '').split(',').map((protocol) => protocol.trim());
  // [MQTT-6.0.0-3] the client offers "mqtt"; a server that selects none would leave it nothing to speak.
  if (!offered.includes(mqttSubprotocol)) return '400 Bad Request';
  return undefined;
}
