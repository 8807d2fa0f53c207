'use strict';

// Each client the adapter works with that this project has installed, connected to one port.
// The source tree has every major (ioredis 5 and 6, node-redis 4, 5 and 6, under the aliases
// of package.json); a lane of the version matrix (clients/matrix.json) has one ioredis and
// one node-redis, at its versions. Each is named by its package and version, and connects
// to one server or to a cluster.

function installed(name) {
  try {
    return { lib: require(name), version: require(`${name}/package.json`).version };
  } catch (error) {
    if (error.code === 'MODULE_NOT_FOUND') return null;
    throw error;
  }
}

const major = (version) => Number(version.split('.')[0]);

function ioredis({ lib, version }) {
  const Redis = lib.Redis || lib;
  return {
    library: 'ioredis',
    version,
    Redis,
    async connect(port) { return new Redis({ port, host: '127.0.0.1', lazyConnect: false }); },
    async close(client) { client.disconnect(); },
    async connectCluster(ports) {
      const cluster = new lib.Cluster(ports.map((port) => ({ host: '127.0.0.1', port })));
      await new Promise((resolve, reject) => {
        cluster.once('ready', resolve);
        cluster.once('error', reject);
      });
      return cluster;
    },
    options: {},
  };
}

function nodeRedis({ lib, version }) {
  return {
    library: 'node-redis',
    version,
    async connect(port) {
      const client = lib.createClient({ socket: { port, host: '127.0.0.1' } });
      await client.connect();
      return client;
    },
    // node-redis 5 renamed quit() to close().
    async close(client) { await (major(version) >= 5 ? client.close() : client.quit()); },
    async connectCluster(ports) {
      const cluster = lib.createCluster({
        rootNodes: ports.map((port) => ({ socket: { host: '127.0.0.1', port } })),
      });
      await cluster.connect();
      return cluster;
    },
    options: { useRedisPackage: true },
  };
}

const CLIENTS = {};
for (const [name, make] of [['ioredis', ioredis], ['ioredis6', ioredis], ['redis', nodeRedis],
  ['redis4', nodeRedis], ['redis6', nodeRedis]]) {
  const found = installed(name);
  if (found === null) continue;
  const kind = make(found);
  CLIENTS[`${kind.library} ${kind.version}`] = kind;
}

module.exports = { CLIENTS };
