// Before the local stack starts containers as their own users (root), the folders they need are
// checked, each refusal one line naming the folder and the fix.
import { chownSync, mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkStateFolder, checkStoreFolder } from '../../local/node-agent/folder-checks.ts';

const storeFix =
  'set TETHER_IMAGE_DIR to a folder only root can write whose parents are open to all (the default is ' +
  '/var/cache/tether/images)';

describe('the image store', () => {
  it(`may not lie under a folder others can write: an agent could put a node_modules folder on the runner's module \
path`, () => {
    const store = join(tmpdir(), 'tether-no-such-folder', 'images');
    expect(() => checkStoreFolder(store)).toThrow(
      `cannot keep the containers' images in ${store}: ${tmpdir()} is writable by users other than root ` +
        `(mode 1777), so an agent could put code on the runner's module path; ${storeFix}`,
    );
  });

  it.runIf(process.getuid?.() === 0)('may not lie under a folder closed to other users or owned by one (root)', () => {
    const closed = mkdtempSync(join(tmpdir(), 'tether-closed-'));
    expect(() => checkStoreFolder(join(closed, 'images'))).toThrow(
      `${closed} is closed to other users (mode 0700), so the containers' users cannot reach the images; ${storeFix}`,
    );
    const owned = join(closed, 'owned');
    mkdirSync(owned, { mode: 0o755 });
    chownSync(owned, 1000, 1000);
    expect(() => checkStoreFolder(join(owned, 'images'))).toThrow(
      `${owned} belongs to uid 1000, so an agent could put code on the runner's module path`,
    );
  });

  it('may lie under root-owned folders open to all', () => {
    expect(() => checkStoreFolder('/usr/share/no-such-folder/images')).not.toThrow();
  });
});

describe('the state folder', () => {
  it("must be reachable by the containers' users: a parent closed to them is named with the fix", () => {
    const closed = mkdtempSync(join(tmpdir(), 'tether-closed-'));
    expect(() => checkStateFolder(join(closed, 'checkout', '.tether-state'))).toThrow(
      `the containers' users cannot reach the state folder ${closed}/checkout/.tether-state: ` +
        `${closed} is closed to other users (mode 0700); set TETHER_STATE_DIR to a folder outside it (for example ` +
        `TETHER_STATE_DIR=/var/lib/tether)`,
    );
    expect(() => checkStateFolder(join(tmpdir(), 'tether-no-such-folder', 'state'))).not.toThrow();
  });
});
