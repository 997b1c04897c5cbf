// Where images go: uploaded to the relay (PUT /uploads/<ns>/<session>/<file>, bearer = projected
// token) when TETHER_RELAY_URL is set, else kept on the workspace volume as file:<path>.
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { RELAY_UPLOAD_PATH } from '../common/session/names.ts';
import type { Media } from '../common/session/schema.ts';

export interface MediaDeps {
  workspace: string;
  namespace: string;
  session: string;
  relay?: { url: string; tokenFile: string };
}

export async function storeMedia(deps: MediaDeps, file: string, image: Buffer, meta: Omit<Media, 'ref' | 'bytes'>): Promise<Media> {
  const dir = join(deps.workspace, 'media', deps.session);
  await mkdir(dir, { recursive: true });
  const path = join(dir, file);
  await writeFile(path, image);
  if (!deps.relay) return { ...meta, ref: `file:${relative(deps.workspace, path)}`, bytes: image.length };
  const token = (await readFile(deps.relay.tokenFile, 'utf8')).trim();
  const response = await fetch(`${deps.relay.url}${RELAY_UPLOAD_PATH}/${deps.namespace}/${deps.session}/${encodeURIComponent(file)}`, {
    method: 'PUT',
    headers: { 'content-type': meta.contentType, authorization: `Bearer ${token}` },
    body: new Uint8Array(image),
    signal: AbortSignal.timeout(30_000),
  });
  if (response.status !== 201 && response.status !== 200) throw new Error(`the relay refused the image (${response.status})`);
  const body = (await response.json()) as { ref?: unknown };
  if (typeof body.ref !== 'string') throw new Error('the relay answered without a media ref');
  return { ...meta, ref: body.ref, bytes: image.length };
}
