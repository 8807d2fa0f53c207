'use strict';

// The package's build hook: `npm pack` (and publish) runs `prepack`, which puts the Functions
// library, both forms, into lua/ from the repository's one copy, lua/dist; `postpack` takes
// the copy away again. An install from the directory (`npm install --install-links`, or
// `npm ci` here) runs only `prepare`, which copies too, and leaves the copy (ignored by git).
// A checkout reads lua/dist itself (lib/route.js), so a copy left behind is never read there.

const fs = require('node:fs');
const path = require('node:path');

const FORMS = ['redis_cell.lua', 'redis_cell.script.lua'];
const PACKAGE = path.join(__dirname, '..');
const REPOSITORY = path.join(PACKAGE, '..', '..', 'lua', 'dist');
const SHIPPED = path.join(PACKAGE, 'lua');

const has = (dir) => FORMS.every((form) => fs.existsSync(path.join(dir, form)));

function prepack() {
  if (!has(REPOSITORY)) {
    throw new Error(`redis-cell: ${REPOSITORY} lacks the Functions library (${FORMS.join(', ')}): `
      + 'pack from a checkout of the repository');
  }
  fs.mkdirSync(SHIPPED, { recursive: true });
  for (const form of FORMS) fs.copyFileSync(path.join(REPOSITORY, form), path.join(SHIPPED, form));
}

function postpack() {
  fs.rmSync(SHIPPED, { recursive: true, force: true });
}

const step = { prepack, postpack }[process.argv[2]];
if (!step) throw new Error('usage: node tools/library.js prepack|postpack');
step();
