// The pictures one run hands the phone — diff pages and screenshots: each stored (uploads.ts), all
// listed on status.result.media (the newest LIMITS.media of them).
import { truncate } from '../../common/session/display.ts';
import { LIMITS, type Media } from '../../common/session/schema.ts';
import type { StatusWriter } from '../status.ts';
import { captureScreenshot, type Browsers, type Picture } from './chromium.ts';
import { storeMedia, type MediaDeps } from './uploads.ts';

export interface RunMediaDeps {
  media: MediaDeps;
  status: StatusWriter;
  browsers: Browsers;
}

export class RunMedia {
  private readonly deps: RunMediaDeps;
  private readonly media: Media[] = [];

  constructor(deps: RunMediaDeps) {
    this.deps = deps;
  }

  /** Stores diff pages (diff-1.png…, or diff-r<request>-1.png… for a requested file) and lists them all at once. */
  async publishDiffPages(pictures: Picture[], about: { caption: string; request?: number }): Promise<void> {
    const stored: Media[] = [];
    for (const [i, picture] of pictures.entries()) {
      const extension = picture.contentType === 'image/png' ? 'png' : 'jpg';
      const file = `diff-${about.request ? `r${about.request}-` : ''}${i + 1}.${extension}`;
      const caption = truncate(
        pictures.length > 1 ? `${about.caption} (${i + 1}/${pictures.length})` : about.caption,
        1000,
      );
      const meta = {
        kind: 'diff' as const,
        contentType: picture.contentType,
        caption,
        ...(about.request ? { request: about.request } : {}),
      };
      stored.push(await storeMedia(this.deps.media, file, picture.image, meta));
    }
    this.add(...stored);
  }

  /** The screenshot tool: the page at input.url, stored and listed; what the agent is told. */
  async screenshot(input: Record<string, unknown>): Promise<string> {
    const url = String(input.url ?? '');
    const image = await captureScreenshot(this.deps.browsers, url, input.fullPage === true);
    const caption = typeof input.caption === 'string' ? input.caption : url;
    const file = `screenshot-${this.media.filter((m) => m.kind === 'screenshot').length + 1}.jpg`;
    this.add(
      await storeMedia(this.deps.media, file, image, {
        kind: 'screenshot',
        contentType: 'image/jpeg',
        caption: truncate(caption, 1000),
      }),
    );
    this.deps.status.addProgress(`Screenshot of ${truncate(url, 80)}`);
    return `Screenshot captured (${image.length} bytes) and sent to the user.`;
  }

  private add(...items: Media[]): void {
    this.media.push(...items);
    this.deps.status.setResult({ media: this.media.slice(-LIMITS.media) });
  }
}
