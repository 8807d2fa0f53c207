'use strict';

// The adapter reads servers' replies and routes commands as clients/protocol.json says, the
// one table the Python package is held to as well.

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { describe, it } = require('node:test');

// The package's own files, as installed (its exports name only its front).
const PACKAGE = path.dirname(require.resolve('redis-cell/package.json'));
const route = require(path.join(PACKAGE, 'lib', 'route.js'));
const { ModuleMissingError, NeedsModuleError, explained } = require(path.join(PACKAGE, 'lib', 'errors.js'));

// The repository's root: this file's, or, where a lane runs a copy of the tests against the
// package as installed, the one it names.
const ROOT = process.env.REDIS_CELL_ROOT || path.join(__dirname, '..', '..', '..');
const PROTOCOL = JSON.parse(fs.readFileSync(path.join(ROOT, 'clients', 'protocol.json'), 'utf8'));

/** What the adapter makes of `reply`, the server's answer to `to`. */
function meaning(to, reply) {
  const error = new Error(reply);
  if (route.scriptMissing(error)) return 'script_missing';
  if (to.startsWith('CL.') || to === 'EVALSHA') {
    return explained(error) instanceof ModuleMissingError ? 'module_missing' : 'answer';
  }
  if (route.refused(error)) return 'refused';
  if (route.noFunctions(error)) return 'no_functions';
  if (route.functionMissing(error)) return 'library_missing';
  return 'answer';
}

describe('the adapter follows clients/protocol.json', () => {
  for (const row of PROTOCOL.replies) {
    it(`reads ${row.to}'s "${row.reply.slice(0, 40)}" as ${row.means}`, () => {
      assert.equal(meaning(row.to, row.reply), row.means);
      assert.ok(row.means in PROTOCOL.meanings);
    });
  }

  for (const [command, how] of Object.entries(PROTOCOL.commands)) {
    it(`sends ${command} to the library as ${how.call} with its keys (${how.keys})`, () => {
      if (how.call === 'none') {
        assert.throws(() => route.fcallWords([command, 'COUNT', 5]), NeedsModuleError);
        return;
      }
      const name = command.toLowerCase().replace('.', '_');
      const [words, keys, args] = how.keys === 'numkeys'
        ? [[command, 2, 'a', 'b', 'FIXED', 1, 1, 'FIXED', 1, 1], ['a', 'b'], ['FIXED', 1, 1, 'FIXED', 1, 1]]
        : [[command, 'a', 1, 1], ['a'], [1, 1]];
      assert.deepEqual(route.fcallWords(words), [how.call.toLowerCase(), name, keys.length, ...keys, ...args]);
    });
  }
});
