// Where images go: uploaded to the relay (PUT /uploads/<ns>/<session>/<file>, bearer = projected
// token) when TETHER_RELAY_URL is set, else kept in the runner's own folder (never the workspace,
// where the agent could have put a symlink at the next file name) as file:<session>/<file>.
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { RELAY_UPLOAD_PATH } from '../../common/session/names.ts';
import type { Media } from '../../common/session/schema.ts';

export interface MediaDeps {
  /** The runner's private folder for pictures kept without a relay (config.mediaDir). */
  dir: string;
  namespace: string;
  session: string;
  relay?: { url: string; tokenFile: string };
}

/** The projected relay token (the runner's own mount), read at each use: the kubelet rotates it. */
export async function relayToken(relay: NonNullable<MediaDeps['relay']>): Promise<string> {
  return (await readFile(relay.tokenFile, 'utf8')).trim();
}

async function keep(deps: MediaDeps, file: string, image: Buffer): Promise<string> {
  const dir = join(deps.dir, deps.session);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await writeFile(join(dir, file), image);
  return `file:${deps.session}/${file}`;
}

async function upload(
  relay: NonNullable<MediaDeps['relay']>,
  deps: MediaDeps,
  file: string,
  image: Buffer,
  contentType: string,
): Promise<string> {
  const response = await fetch(
    `${relay.url}${RELAY_UPLOAD_PATH}/${deps.namespace}/${deps.session}/${encodeURIComponent(file)}`,
    {
      method: 'PUT',
      headers: { 'content-type': contentType, authorization: `Bearer ${await relayToken(relay)}` },
      body: new Uint8Array(image),
      signal: AbortSignal.timeout(30_000),
    },
  );
  if (response.status !== 201 && response.status !== 200)
    throw new Error(`the relay refused the image (${response.status})`);
  const body = (await response.json()) as { ref?: unknown };
  if (typeof body.ref !== 'string') throw new Error('the relay answered without a media ref');
  return body.ref;
}

export async function storeMedia(
  deps: MediaDeps,
  file: string,
  image: Buffer,
  meta: Omit<Media, 'ref' | 'bytes'>,
): Promise<Media> {
  const ref = deps.relay
    ? await upload(deps.relay, deps, file, image, meta.contentType)
    : await keep(deps, file, image);
  return { ...meta, ref, bytes: image.length };
}
