// PUT /uploads/<namespace>/<session>/<file>: everything that can be refused is refused before a
// byte of the body is read — rate, name, declared size, token, quota, free slot — and the body
// is then read up to what is left of the limit and the Session's quota, within a deadline.
import type { Request, Response } from 'express';
import type { UploadLimits } from '../config.ts';
import type { RelayMetrics } from '../metrics.ts';
import type { UploadAuthorizer } from './auth.ts';
import { RateLimiter } from '../rate-limit.ts';
import { MediaError, checkUpload, type MediaStore } from './store.ts';

export interface UploadDeps {
  media: MediaStore;
  maxBytes: number;
  limits: UploadLimits;
  authorizer: UploadAuthorizer;
  metrics: RelayMetrics;
  now: () => number;
}

/** A refusal already counted under its outcome. */
class RefusedUpload extends MediaError {}

/** The outcome of a refusal thrown by the checks, the body reader or the store, by status. */
const OUTCOME_OF: Record<number, string> = {
  400: 'invalid',
  408: 'timeout',
  413: 'too_large',
  415: 'unsupported_type',
};

/** A fixed number of slots overall and one per key; never waits: a taken slot is refused. */
export class UploadSlots {
  private readonly capacity: number;
  private readonly busy = new Set<string>();

  constructor(capacity: number) {
    this.capacity = capacity;
  }

  /** 'full' when every slot is taken, 'busy' when key already holds one, else a release function. */
  take(key: string): (() => void) | 'full' | 'busy' {
    if (this.busy.has(key)) return 'busy';
    if (this.busy.size >= this.capacity) return 'full';
    this.busy.add(key);
    return () => this.busy.delete(key);
  }
}

const bearer = (req: Request) => /^Bearer (.+)$/.exec(req.get('authorization') ?? '')?.[1] ?? '';

/** Reads at most `limit` bytes of the body; 413 beyond it, 408 after the deadline. Never holds more than the limit. */
export function readBody(req: Request, limit: number, timeoutMs: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const stop = (error?: Error) => {
      clearTimeout(timer);
      req.off('data', onData).off('end', onEnd).off('error', stop).off('aborted', onAborted);
      if (error) {
        chunks.length = 0;
        req.pause(); // the rest is not read; the connection is closed after the answer
        reject(error);
      } else resolve(Buffer.concat(chunks, size));
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit)
        stop(new MediaError(413, `image larger than ${limit} bytes (size limit or the Session's media quota)`));
      else chunks.push(chunk);
    };
    const onEnd = () => stop();
    const onAborted = () => stop(new MediaError(400, 'upload aborted'));
    const timer = setTimeout(() => stop(new MediaError(408, `upload not complete within ${timeoutMs} ms`)), timeoutMs);
    req.on('data', onData).on('end', onEnd).on('error', stop).on('aborted', onAborted);
  });
}

export function uploadHandler(deps: UploadDeps): (req: Request, res: Response) => Promise<void> {
  const { limits } = deps;
  const rate = new RateLimiter({ count: limits.ratePerMinute, periodMs: 60_000, now: deps.now });
  const slots = new UploadSlots(limits.concurrency);
  const refuse = (outcome: string, status: number, message: string): never => {
    deps.metrics.mediaUploads.inc({ outcome });
    throw new RefusedUpload(status, message);
  };
  const accept = async (req: Request, res: Response): Promise<void> => {
    const [namespace, session, file] = [req.params.namespace, req.params.session, req.params.file].map(String) as [
      string,
      string,
      string,
    ];
    const folder = `${namespace}/${session}`;
    const ref = `${folder}/${file}`;
    if (!rate.take(`source ${req.socket.remoteAddress}`))
      refuse('rate_limited', 429, 'too many uploads from this address');
    const contentType = req.get('content-type')?.split(';')[0]?.trim();
    checkUpload(ref, contentType);
    const declared = Number(req.get('content-length') ?? NaN);
    if (declared > deps.maxBytes) refuse('too_large', 413, `image larger than ${deps.maxBytes} bytes`);
    const token = bearer(req);
    if (!token) refuse('unauthenticated', 401, 'a runner token (Authorization: Bearer) is required');
    if (!(await deps.authorizer.mayUpload(token, namespace, session)))
      refuse('forbidden', 403, "token does not belong to this session's runner");
    if (!rate.take(`runner ${folder}`)) refuse('rate_limited', 429, 'too many uploads from this runner');
    const release = slots.take(folder);
    if (release === 'full') refuse('busy', 503, 'too many uploads at once; try again shortly');
    if (release === 'busy') refuse('rate_limited', 429, 'one upload at a time per Session');
    try {
      const used = await deps.media.usage(folder, file);
      if (used.files + 1 > limits.sessionFiles)
        refuse('quota', 413, `the Session already keeps ${used.files} files (quota ${limits.sessionFiles})`);
      const room = Math.min(deps.maxBytes, limits.sessionBytes - used.bytes);
      if (declared > room)
        refuse('quota', 413, `image larger than the ${room} bytes left in the Session's media quota`);
      const bytes = await readBody(req, room, limits.timeoutMs);
      await deps.media.put(ref, contentType, bytes);
    } finally {
      (release as () => void)();
    }
    deps.metrics.mediaUploads.inc({ outcome: 'stored' });
    res.status(201).json({ ref });
  };
  return async (req, res) => {
    try {
      await accept(req, res);
    } catch (error) {
      if (error instanceof MediaError && !(error instanceof RefusedUpload))
        deps.metrics.mediaUploads.inc({ outcome: OUTCOME_OF[error.status] ?? 'invalid' });
      throw error;
    }
  };
}
