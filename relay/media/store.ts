// Uploaded images on a volume: <dir>/<namespace>/<session>/<file>, checked, size-limited, expiring.
import { randomUUID } from 'node:crypto';
import { mkdir, readFile, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, join, resolve, sep } from 'node:path';
import type { Logger } from 'pino';
import { HttpError } from '../http-error.ts';
import { contentTypeOf, isMediaType, isValidRef, type ImageType, type MediaType } from './refs.ts';

/** A refused upload or lookup, with the HTTP status that says why. */
export class MediaError extends HttpError {
  override readonly name = 'MediaError';
}

/** The type the bytes really are (PNG, JPEG, WebP or GIF signature), whatever the header claims. */
export function sniffImage(bytes: Buffer): ImageType | undefined {
  if (bytes.length >= 8 && bytes.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])))
    return 'image/png';
  if (bytes.length >= 3 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return 'image/jpeg';
  if (bytes.length >= 12 && bytes.toString('latin1', 0, 4) === 'RIFF' && bytes.toString('latin1', 8, 12) === 'WEBP')
    return 'image/webp';
  if (bytes.length >= 6 && /^GIF8[79]a$/.test(bytes.toString('latin1', 0, 6))) return 'image/gif';
  return undefined;
}

/** The name, extension and Content-Type of an upload are on the allowlist and agree (before any byte is read). */
export function checkUpload(ref: string, contentType: string | undefined): asserts contentType is MediaType {
  if (!isValidRef(ref))
    throw new MediaError(400, 'invalid media reference (lower-case name, one .png, .jpg or .jpeg extension)');
  if (!isMediaType(contentType)) throw new MediaError(415, 'Content-Type must be image/png or image/jpeg');
  if (contentTypeOf(ref) !== contentType) throw new MediaError(415, 'file extension does not match Content-Type');
}

export class MediaStore {
  private readonly root: string;
  private readonly maxBytes: number;
  private readonly ttlMs: number;
  private readonly now: () => number;

  /** now: the clock (tests set it); Date.now by default */
  constructor(options: { dir: string; maxBytes: number; ttlMs: number; now?: () => number }) {
    this.root = resolve(options.dir);
    this.maxBytes = options.maxBytes;
    this.ttlMs = options.ttlMs;
    this.now = options.now ?? Date.now;
  }

  /** A path under the root; anything that would leave it is refused. */
  private inside(relative: string): string {
    const full = resolve(this.root, relative);
    if (!full.startsWith(this.root + sep)) throw new MediaError(400, 'invalid media reference');
    return full;
  }

  private path(ref: string): string {
    if (!isValidRef(ref)) throw new MediaError(400, 'invalid media reference');
    return this.inside(ref);
  }

  async put(ref: string, contentType: string | undefined, bytes: Buffer): Promise<void> {
    checkUpload(ref, contentType);
    await this.write(ref, contentType, bytes);
  }

  /** Keeps a picture the phone sent: any image type the agent accepts, its extension matching. */
  async putImage(ref: string, contentType: ImageType, bytes: Buffer): Promise<void> {
    if (!isValidRef(ref) || contentTypeOf(ref) !== contentType) throw new MediaError(400, 'invalid media reference');
    await this.write(ref, contentType, bytes);
  }

  private async write(ref: string, contentType: ImageType, bytes: Buffer): Promise<void> {
    const file = this.path(ref);
    if (bytes.length === 0) throw new MediaError(400, 'empty body');
    if (bytes.length > this.maxBytes) throw new MediaError(413, `image larger than ${this.maxBytes} bytes`);
    if (sniffImage(bytes) !== contentType) throw new MediaError(415, `body is not a ${contentType} image`);
    await mkdir(dirname(file), { recursive: true });
    const temp = `${file}.${randomUUID()}.tmp`;
    await writeFile(temp, bytes, { mode: 0o600 });
    await rename(temp, file);
  }

  async get(ref: string): Promise<{ bytes: Buffer; contentType: ImageType }> {
    const file = this.path(ref);
    try {
      const info = await stat(file);
      if (this.now() - info.mtimeMs > this.ttlMs) throw new MediaError(404, 'media expired');
      return { bytes: await readFile(file), contentType: contentTypeOf(ref) };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw new MediaError(404, 'no such media');
      throw error;
    }
  }

  /** Files and bytes kept under a Session's folder (<namespace>/<session>), leaving out one file name. */
  async usage(folder: string, except?: string): Promise<{ files: number; bytes: number }> {
    const dir = this.inside(folder);
    const names = await readdir(dir).catch((e: NodeJS.ErrnoException) => {
      if (e.code === 'ENOENT') return [];
      throw e;
    });
    let bytes = 0;
    let files = 0;
    for (const name of names.filter((n) => n !== except && !n.endsWith('.tmp'))) {
      files++;
      bytes += (await stat(join(dir, name))).size;
    }
    return { files, bytes };
  }

  /** Deletes files past the TTL and the folders they leave empty. */
  async prune(): Promise<number> {
    const now = this.now();
    let removed = 0;
    const walk = async (dir: string): Promise<void> => {
      const entries = await readdir(dir, { withFileTypes: true }).catch((e: NodeJS.ErrnoException) => {
        if (e.code === 'ENOENT') return [];
        throw e;
      });
      for (const entry of entries) {
        const full = join(dir, entry.name);
        if (entry.isDirectory()) await walk(full);
        else if (now - (await stat(full)).mtimeMs > this.ttlMs) {
          await rm(full, { force: true });
          removed++;
        }
      }
      if (dir !== this.root && (await readdir(dir)).length === 0) await rm(dir, { recursive: true, force: true });
    };
    await walk(this.root);
    return removed;
  }
}

/** Removes expired media every ten minutes; returns the function that stops it. */
export function startPruning(media: MediaStore, logger: Logger): () => void {
  const janitor = setInterval(() => {
    media.prune().then(
      (removed) => removed && logger.info({ removed }, 'expired media removed'),
      (error: unknown) => logger.error({ err: error }, 'media clean-up failed; next run in 10 min'),
    );
  }, 600_000);
  janitor.unref();
  return () => clearInterval(janitor);
}
