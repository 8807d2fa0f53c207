'use strict';

// Each client the adapter works with, connected to one port: ioredis 5 and 6, node-redis 4, 5
// and 6.

const IORedis = require('ioredis');
const IORedis6 = require('ioredis6');
const redis5 = require('redis');
const redis4 = require('redis4');
const redis6 = require('redis6');

const CLIENTS = {
  ioredis: {
    async connect(port) { return new IORedis({ port, host: '127.0.0.1', lazyConnect: false }); },
    async close(client) { client.disconnect(); },
    options: {},
  },
  'ioredis 6': {
    async connect(port) { return new IORedis6.Redis({ port, host: '127.0.0.1', lazyConnect: false }); },
    async close(client) { client.disconnect(); },
    options: {},
  },
  'node-redis 6': {
    async connect(port) { return redis6.createClient({ socket: { port, host: '127.0.0.1' } }).connect(); },
    async close(client) { await client.close(); },
    options: { useRedisPackage: true },
  },
  'node-redis 5': {
    async connect(port) { return redis5.createClient({ socket: { port, host: '127.0.0.1' } }).connect(); },
    async close(client) { await client.close(); },
    options: { useRedisPackage: true },
  },
  'node-redis 4': {
    async connect(port) {
      const client = redis4.createClient({ socket: { port, host: '127.0.0.1' } });
      await client.connect();
      return client;
    },
    async close(client) { await client.quit(); },
    options: { useRedisPackage: true },
  },
};

module.exports = { CLIENTS };
