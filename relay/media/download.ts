// GET /uploads/<namespace>/<session>/<file>: a runner reads a file of its own Session's folder
// (the pictures the phone sent with the command), under the same authorization as its uploads:
// the projected token bound to that Session's runner Pod. Nothing outside the folder is served.
import type { Request, Response } from 'express';
import type { UploadAuthorizer } from './auth.ts';
import { RateLimiter } from '../rate-limit.ts';
import { MediaError, type MediaStore } from './store.ts';

export interface DownloadDeps {
  media: Pick<MediaStore, 'get'>;
  authorizer: UploadAuthorizer;
  /** the namespace of this relay's Sessions: refs name it */
  namespace: string;
  ratePerMinute: number;
  now: () => number;
}

const bearer = (req: Request) => /^Bearer (.+)$/.exec(req.get('authorization') ?? '')?.[1] ?? '';

export function downloadHandler(deps: DownloadDeps): (req: Request, res: Response) => Promise<void> {
  const rate = new RateLimiter({ count: deps.ratePerMinute, periodMs: 60_000, now: deps.now });
  return async (req, res) => {
    const [namespace, session, file] = [req.params.namespace, req.params.session, req.params.file].map(String) as [
      string,
      string,
      string,
    ];
    if (!rate.take(`source ${req.socket.remoteAddress}`))
      throw new MediaError(429, 'too many requests from this address');
    const token = bearer(req);
    if (!token) throw new MediaError(401, 'a runner token (Authorization: Bearer) is required');
    if (namespace !== deps.namespace || !(await deps.authorizer.mayUpload(token, namespace, session))) {
      throw new MediaError(403, "token does not belong to this session's runner");
    }
    const { bytes, contentType } = await deps.media.get(`${namespace}/${session}/${file}`);
    res
      .set({ 'Content-Type': contentType, 'Cache-Control': 'no-store', 'X-Content-Type-Options': 'nosniff' })
      .send(bytes);
  };
}
