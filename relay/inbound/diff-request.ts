// `diff <file>`: a known file goes to the runner (spec.diffRequests, append-only), whose pages then
// reach the phone; an unknown one gets the list of changed files back.
import { isConflict } from '../../common/kube/errors.ts';
import { matchDiffFile } from '../../common/session/diff-files.ts';
import { LIMITS, type Session } from '../../common/session/schema.ts';
import { text } from '../text.ts';
import type { SessionApi } from '../session-store.ts';

export async function askDiff(
  sessions: SessionApi,
  namespace: string,
  current: Session | undefined,
  asked: string,
): Promise<string | undefined> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const session = current && (await sessions.get(namespace, current.metadata.name!));
    const files = session?.status?.result?.diffFiles;
    if (!session || session.status?.pending?.kind !== 'changes' || !files) return text.noDiff();
    const file = matchDiffFile(files.names, asked);
    if (file === undefined) return text.diffFiles(asked, files);
    const requests = session.spec.diffRequests ?? [];
    if (requests.length >= LIMITS.diffRequests) return text.diffLimit(LIMITS.diffRequests);
    try {
      await sessions.patch(namespace, session.metadata.name!, {
        metadata: { resourceVersion: session.metadata.resourceVersion },
        spec: { diffRequests: [...requests, file] },
      });
      return undefined;
    } catch (error) {
      if (!isConflict(error)) throw error;
    }
  }
  throw new Error('diff request kept conflicting');
}
