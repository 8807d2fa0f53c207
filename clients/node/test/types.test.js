'use strict';

// The package's types (index.d.ts) as a TypeScript user meets them: test/types/cell.ts,
// compiled under `tsc --strict`, calls every command with its options on ioredis and
// node-redis, and expects the compiler to refuse what the client refuses.

const assert = require('node:assert/strict');
const { execFileSync } = require('node:child_process');
const path = require('node:path');
const { describe, it } = require('node:test');

function tsc() {
  try {
    return require.resolve('typescript/bin/tsc');
  } catch {
    return null;
  }
}

describe('the types', () => {
  const compiler = tsc();
  it('compile under tsc --strict', { skip: compiler ? false : 'typescript is not installed here' }, () => {
    const config = path.join(__dirname, 'types', 'tsconfig.json');
    let output = '';
    try {
      output = execFileSync(process.execPath, [compiler, '-p', config], { encoding: 'utf8', timeout: 120000 });
    } catch (error) {
      assert.fail(`tsc refused the types:\n${error.stdout}${error.stderr}`);
    }
    assert.equal(output, '');
  });
});
