// `diff <file>`: a known file goes to the runner (spec.diffRequests, append-only), whose pages then
// reach the phone; an unknown one gets the list of changed files back.
import { done, retryOnConflict } from '../../common/kube/retry.ts';
import { matchDiffFile } from '../../common/session/diff-files.ts';
import { LIMITS, type Session } from '../../common/session/schema.ts';
import { text } from '../text.ts';
import type { SessionApi } from '../session-store.ts';

export function askDiff(
  sessions: SessionApi,
  namespace: string,
  current: Session | undefined,
  asked: string,
): Promise<string | undefined> {
  return retryOnConflict(
    async () => current && (await sessions.get(namespace, current.metadata.name!)),
    (session) => {
      const files = session?.status?.result?.diffFiles;
      if (!session || session.status?.pending?.kind !== 'changes' || !files) return done(text.noDiff());
      const file = matchDiffFile(files.names, asked);
      if (file === undefined) return done(text.diffFiles(asked, files));
      const requests = session.spec.diffRequests ?? [];
      if (requests.length >= LIMITS.diffRequests) return done(text.diffLimit(LIMITS.diffRequests));
      return [...requests, file];
    },
    async (diffRequests, session) => {
      await sessions.patch(namespace, session!.metadata.name!, {
        metadata: { resourceVersion: session!.metadata.resourceVersion },
        spec: { diffRequests },
      });
      return undefined;
    },
  );
}
