// Retrying a runner's first call while its grant is on the way, and only then.
import { describe, expect, it } from 'vitest';
import { onceGranted } from '../../common/kube/errors.ts';
import { HttpError } from '../../common/kube/raw.ts';

describe('onceGranted', () => {
  it('calls again while refused (403) and returns the first answer once granted', async () => {
    let calls = 0;
    const answer = await onceGranted(async () => {
      calls++;
      if (calls < 3) throw new HttpError(403, '{"reason":"Forbidden"}');
      return 'session';
    });
    expect([answer, calls]).toEqual(['session', 3]);
  });

  it('gives up past the grace, and never retries another error', async () => {
    const forbidden = new HttpError(403, '{"reason":"Forbidden"}');
    await expect(onceGranted(async () => Promise.reject(forbidden), 0)).rejects.toBe(forbidden);
    let calls = 0;
    const missing = new HttpError(404, '{"reason":"NotFound"}');
    await expect(onceGranted(async () => (calls++, Promise.reject(missing)))).rejects.toBe(missing);
    expect(calls).toBe(1);
  });
});
