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
    // Absent, not broken: the missing module is the package itself.
    if (error.code === 'MODULE_NOT_FOUND' && error.message.includes(`'${name}'`)) return null;
    throw error;
  }
}

const major = (version) => Number(version.split('.')[0]);

function ioredis({ lib, version }) {
  const Redis = lib.Redis || lib;
  return {
    library: 'ioredis',
    version,
    keyPrefix: true,
    async connect(port, { keyPrefix, username, password } = {}) {
      return new Redis({ port, host: '127.0.0.1', lazyConnect: false, keyPrefix, username, password });
    },
    async close(client) { client.disconnect(); },
    async connectCluster(ports, { keyPrefix } = {}) {
      const cluster = new lib.Cluster(ports.map((port) => ({ host: '127.0.0.1', port })), { keyPrefix });
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
    // node-redis 6.1 brought a keyPrefix of its own.
    keyPrefix: major(version) > 6 || (major(version) === 6 && Number(version.split('.')[1]) >= 1),
    async connect(port, { keyPrefix, username, password } = {}) {
      const client = lib.createClient({ socket: { port, host: '127.0.0.1' }, keyPrefix, username, password });
      await client.connect();
      return client;
    },
    // node-redis 5 renamed quit() to close().
    async close(client) { await (major(version) >= 5 ? client.close() : client.quit()); },
    async connectCluster(ports, { keyPrefix } = {}) {
      const cluster = lib.createCluster({
        rootNodes: ports.map((port) => ({ socket: { host: '127.0.0.1', port } })),
        keyPrefix,
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

// A lane names the clients it installed (REDIS_CELL_CLIENTS, "ioredis 5.0.0,node-redis
// 4.0.0"): a client that failed to load must not pass as one left out.
const wanted = (process.env.REDIS_CELL_CLIENTS || '').split(',').filter(Boolean).sort();
const found = Object.keys(CLIENTS).sort();
if (found.length === 0 || (wanted.length > 0 && wanted.join() !== found.join())) {
  throw new Error(`the tests found the clients [${found.join(', ')}], not [${wanted.join(', ')}]`);
}

module.exports = { CLIENTS };
