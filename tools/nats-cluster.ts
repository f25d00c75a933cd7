/**
 * A three-node NATS JetStream cluster on loopback, for the tests and the bench
 * of the JetStream log (src/log/jetstream/). Each node is a `nats-server`
 * process (Debian package nats-server) with its own store directory; the
 * cluster is ready when JetStream answers an account-info request, which it
 * does only once the meta group has a leader.
 *
 * nats-server 2.9 cannot take port 0 for cluster routes (each node must name
 * the others' route ports), so the ports are picked free beforehand: bound to
 * port 0 by Node and released. Another process could take one in between; the
 * start-up then fails with nats-server's own message, and a rerun picks again.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';

export const natsServerInstallHint = 'nats-server is not installed: apt-get install -y --no-install-recommends nats-server (or run tools/install-test-packages.sh as root)';

const nodeCount = 3;
const readyTimeoutMs = 20_000;

export interface NatsNode {
  readonly name: string;
  readonly clientPort: number;
  readonly routePort: number;
  readonly storeDir: string;
  process: ChildProcess | undefined;
  /** Everything the node printed, for a failure message. */
  readonly output: string[];
}

export interface NatsCluster {
  readonly nodes: readonly NatsNode[];
  /** `nats://127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3`: every node, as a client's server list. */
  readonly servers: string;
  /** Kills one node at once (SIGKILL): its store stays, so start() brings it back with its data. */
  kill(index: number): Promise<void>;
  start(index: number): Promise<void>;
  stop(): Promise<void>;
}

/** The Debian package installs it in /usr/sbin, which is not on every user's PATH. */
const natsServerCandidates = ['nats-server', '/usr/sbin/nats-server'];

/** The nats-server binary; fails with the apt command when it is missing: a test that needs it must not be skipped. */
export function requireNatsServer(): string {
  for (const candidate of natsServerCandidates) {
    const found = spawnSync(candidate, ['--version'], { encoding: 'utf8' });
    if (found.error === undefined && found.status === 0) return candidate;
  }
  throw new Error(natsServerInstallHint);
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address !== null ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

function configOf(node: NatsNode, all: readonly NatsNode[], clusterName: string): string {
  const routes = all.filter((other) => other !== node).map((other) => `nats-route://127.0.0.1:${other.routePort}`);
  return [
    `server_name: ${node.name}`,
    `listen: 127.0.0.1:${node.clientPort}`,
    // A record is one message: room for large ones (the default is 1 MB; 8 MB is the recommended maximum).
    'max_payload: 8MB',
    `jetstream { store_dir: "${node.storeDir}", max_memory_store: 64MB, max_file_store: 2GB }`,
    `cluster { name: ${clusterName}, listen: 127.0.0.1:${node.routePort}, routes: [${routes.join(', ')}] }`,
    '',
  ].join('\n');
}

function launch(binary: string, node: NatsNode, configFile: string): void {
  const child = spawn(binary, ['-c', configFile], { stdio: ['ignore', 'pipe', 'pipe'] });
  const keep = (chunk: Buffer): void => {
    node.output.push(chunk.toString());
    if (node.output.length > 200) node.output.splice(0, node.output.length - 200);
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  node.process = child;
}

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/**
 * Resolves once JetStream answers through the node at `port`; with `replicas`, once a stream of that many
 * replicas can be placed (an account-info answer alone can come before the meta group knows every peer).
 */
async function jetStreamReady(port: number, what: string, output: () => string, replicas = 0): Promise<void> {
  const deadline = Date.now() + readyTimeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    try {
      const connection = await connect({ servers: `127.0.0.1:${port}`, reconnect: false, timeout: 1000 });
      try {
        const manager = await jetstreamManager(connection, { timeout: 1000 });
        await manager.getAccountInfo();
        if (replicas > 0) {
          await manager.streams.add({ name: 'cairn-ready-probe', subjects: ['cairn-ready-probe'], num_replicas: replicas });
          await manager.streams.delete('cairn-ready-probe');
        }
        return;
      } finally {
        await connection.close();
      }
    } catch (error) {
      lastError = error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  throw new Error(`the NATS cluster did not become ready (${what}) within ${readyTimeoutMs} ms: ${String(lastError)}\n${output()}`);
}

export async function startNatsCluster(options: { clusterName?: string } = {}): Promise<NatsCluster> {
  const binary = requireNatsServer();
  const root = mkdtempSync(join(tmpdir(), 'cairn-nats-'));
  const clusterName = options.clusterName ?? 'cairn';
  const nodes: NatsNode[] = [];
  for (let i = 1; i <= nodeCount; i++) {
    nodes.push({ name: `n${i}`, clientPort: await freePort(), routePort: await freePort(), storeDir: join(root, `n${i}`), process: undefined, output: [] });
  }
  const configFiles = nodes.map((node) => {
    const file = join(root, `${node.name}.conf`);
    writeFileSync(file, configOf(node, nodes, clusterName));
    return file;
  });
  const outputOf = (): string => nodes.map((node) => `--- ${node.name}\n${node.output.join('').slice(-2000)}`).join('\n');
  nodes.forEach((node, i) => launch(binary, node, configFiles[i]!));

  const cluster: NatsCluster = {
    nodes,
    servers: nodes.map((node) => `127.0.0.1:${node.clientPort}`).join(','),
    async kill(index) {
      const child = nodes[index]!.process;
      if (child === undefined) return;
      child.kill('SIGKILL');
      await exited(child);
      nodes[index]!.process = undefined;
    },
    async start(index) {
      const node = nodes[index]!;
      if (node.process !== undefined) return;
      launch(binary, node, configFiles[index]!);
      await jetStreamReady(node.clientPort, `${node.name} restarted`, outputOf);
    },
    async stop() {
      await Promise.all(nodes.map((_node, i) => cluster.kill(i)));
      rmSync(root, { recursive: true, force: true });
    },
  };
  try {
    for (const node of nodes) await jetStreamReady(node.clientPort, node.name, outputOf);
    await jetStreamReady(nodes[0]!.clientPort, `placing a stream on all ${nodeCount} nodes`, outputOf, nodeCount);
  } catch (error) {
    await cluster.stop();
    throw error;
  }
  return cluster;
}
