import { describe, expect, it } from 'vitest';
import { CONFLICT_ATTEMPTS, done, retryOnConflict } from '../../common/kube/retry.ts';
import { HttpError } from '../../common/kube/raw.ts';

const conflict = () =>
  new HttpError(409, JSON.stringify({ reason: 'Conflict', message: 'the object has been modified' }));

describe('retryOnConflict', () => {
  it('reads again after a conflict and writes what the fresh read gives', async () => {
    const reads: number[] = [];
    let stored = 1;
    let conflicts = 2;
    const result = await retryOnConflict(
      async (attempt) => {
        reads.push(attempt);
        return stored;
      },
      (current) => current + 10,
      async (next) => {
        if (conflicts-- > 0) {
          stored += 1; // another writer got there first
          throw conflict();
        }
        stored = next;
        return `wrote ${next}`;
      },
    );
    expect(result).toBe('wrote 13');
    expect(reads).toEqual([0, 1, 2]);
  });

  it('writes nothing when the mutation says done', async () => {
    let writes = 0;
    const result = await retryOnConflict(
      async () => 'already there',
      (current) => done(current.length),
      async () => writes++,
    );
    expect(result).toBe(13);
    expect(writes).toBe(0);
  });

  it(`gives up after ${CONFLICT_ATTEMPTS} conflicting writes and throws the conflict`, async () => {
    let writes = 0;
    const attempt = retryOnConflict(
      async () => 0,
      () => 1,
      async () => {
        writes++;
        throw conflict();
      },
    );
    await expect(attempt).rejects.toMatchObject({ code: 409 });
    expect(writes).toBe(CONFLICT_ATTEMPTS);
  });

  it('throws any other error at once', async () => {
    let writes = 0;
    const attempt = retryOnConflict(
      async () => 0,
      () => 1,
      async () => {
        writes++;
        throw new HttpError(422, '{"reason":"Invalid"}');
      },
    );
    await expect(attempt).rejects.toMatchObject({ code: 422 });
    expect(writes).toBe(1);
  });
});
