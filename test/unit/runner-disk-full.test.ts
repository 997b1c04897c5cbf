import { tmpdir } from 'node:os';
import { describe, expect, it } from 'vitest';
import { isDiskFull } from '../../runner-image/workspace/disk-full.ts';

describe('isDiskFull', () => {
  it("knows ENOSPC and git's words for it, and not other failures on a volume with room", async () => {
    expect(await isDiskFull(Object.assign(new Error('write failed'), { code: 'ENOSPC' }), tmpdir())).toBe(true);
    expect(
      await isDiskFull(
        new Error('git checkout failed: fatal: cannot create directory: No space left on device'),
        tmpdir(),
      ),
    ).toBe(true);
    expect(await isDiskFull(new Error('git read-tree failed: error: unable to write file index.html'), tmpdir())).toBe(
      false,
    );
    expect(await isDiskFull(new Error('unable to write file'), '/no/such/folder')).toBe(false);
  });
});
