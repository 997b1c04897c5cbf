// The diff pictures drawn by Debian's Chromium: every rendering is saved under
// test-results/diff-pages/ to be looked at, and checked for width, cropped height, page count,
// size and time, ordinary and hostile diffs alike.
import { mkdirSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LIMITS } from '../../common/session/schema.ts';
import { DIFF_LAYOUT, paginate } from '../../runner-image/pictures/diff-layout.ts';
import { loadHighlighter, pageHtml } from '../../runner-image/pictures/diff-html.ts';
import { parseDiff } from '../../runner-image/pictures/diff-parse.ts';
import { DiffDrawer, REVIEW_PAGES, type Review } from '../../runner-image/pictures/diff-review.ts';
import { Browsers, renderPages, type Picture } from '../../runner-image/pictures/chromium.ts';
import { bigFile, hugeLine, HOSTILE_NAMES_DIFF, manyFiles, SAMPLE_DIFF } from '../support/diffs.ts';

const OUT = 'test-results/diff-pages';
const WIDTH = DIFF_LAYOUT.width * DIFF_LAYOUT.scale;
const MAX_HEIGHT = DIFF_LAYOUT.maxHeight * DIFF_LAYOUT.scale;
/** On two shared cores under load; a render takes about a second when the machine is idle. */
const RENDER_BUDGET_MS = 30_000;

const sizeOf = (png: Buffer) => ({ width: png.readUInt32BE(16), height: png.readUInt32BE(20) });

let browsers: Browsers;
let drawer: DiffDrawer;
beforeAll(() => {
  mkdirSync(OUT, { recursive: true });
  browsers = new Browsers();
  drawer = new DiffDrawer(browsers);
});
afterAll(() => browsers?.close());

/** The drawn height is the laid-out one (plus the footer on the last page): the crop is the content. */
function matchesLayout(review: Review): void {
  review.pictures.forEach((p, i) => {
    const drawn = sizeOf(p.image).height / DIFF_LAYOUT.scale;
    expect(drawn).toBeGreaterThanOrEqual(review.pages[i]!.height);
    expect(drawn).toBeLessThanOrEqual(review.pages[i]!.height + DIFF_LAYOUT.footerHeight);
  });
}

/** Saves each page as <name>-<n>.png and checks what every page must be. */
function check(name: string, pictures: Picture[]): Array<{ width: number; height: number }> {
  return pictures.map((p, i) => {
    writeFileSync(`${OUT}/${name}-${i + 1}.png`, p.image);
    expect(p.contentType).toBe('image/png');
    expect(p.image.length).toBeLessThanOrEqual(LIMITS.mediaBytes);
    const size = sizeOf(p.image);
    expect(size.width).toBe(WIDTH);
    expect(size.height).toBeLessThanOrEqual(MAX_HEIGHT);
    return size;
  });
}

async function timed(run: () => Promise<Review>): Promise<Review> {
  const started = Date.now();
  const review = await run();
  expect(Date.now() - started).toBeLessThan(RENDER_BUDGET_MS);
  return review;
}

describe('diff pages', { timeout: 120_000 }, () => {
  it('a small diff: one page, 780 px wide, as tall as its content', async () => {
    const review = await timed(() => drawer.review(SAMPLE_DIFF, '4 files changed, 4 insertions(+), 1 deletion(-)'));
    const [size] = check('small', review.pictures);
    expect(review.pictures).toHaveLength(1);
    expect(size!.height).toBeGreaterThan(300);
    expect(size!.height).toBeLessThan(MAX_HEIGHT);
    const oneFile = check(
      'one-file',
      (await drawer.review(SAMPLE_DIFF.split('diff --git a/README.md')[0]!, '1 file changed')).pictures,
    );
    expect(oneFile[0]!.height).toBeLessThan(size!.height);
    matchesLayout(review);
  });

  it('a long diff: 3 pages in order, the rest counted, each within the page and media bounds', async () => {
    const review = await timed(() =>
      drawer.review(manyFiles(40, 14), '40 files changed, 560 insertions(+), 40 deletions(-)'),
    );
    check('long', review.pictures);
    expect(review.pictures).toHaveLength(REVIEW_PAGES);
    expect(review.hidden.length).toBeGreaterThan(0);
    expect(review.files).toHaveLength(40);
    matchesLayout(review);
  });

  it('one file asked for: its own pages, cut at hunk boundaries', async () => {
    const [file] = (await drawer.review(bigFile(6, 12), 't')).files;
    const pictures = await drawer.file(file!);
    check('file-request', pictures);
    expect(pictures.length).toBeGreaterThan(1);
  });
});

describe('the media size limit', { timeout: 120_000 }, () => {
  it('a page whose PNG is over the limit is sent as a JPEG within it', async () => {
    const [page] = paginate(parseDiff(manyFiles(3, 40)), 1).pages;
    const html = pageHtml(page!, { title: 'over the limit', counter: '' }, await loadHighlighter());
    const [png] = await renderPages(browsers, [html]);
    const [jpeg] = await renderPages(browsers, [html], png!.image.length - 1);
    expect(png!.contentType).toBe('image/png');
    expect(jpeg!.contentType).toBe('image/jpeg');
    expect(jpeg!.image.length).toBeLessThan(png!.image.length);
    await expect(renderPages(browsers, [html], 1000)).rejects.toThrow(/does not fit in 1000 bytes/);
  });
});

describe('hostile diffs render safely within time and size bounds', { timeout: 120_000 }, () => {
  it.each([
    ['names with HTML, newlines, unicode; CRLF; bidi; a <script> file', HOSTILE_NAMES_DIFF, 2],
    [
      'a binary file',
      'diff --git a/logo.png b/logo.png\nnew file mode 100644\nindex 0000000..1111111\nBinary files /dev/null and ' +
        'b/logo.png differ\n',
      1,
    ],
    ['a 1 MB single line', hugeLine(1_000_000), 1],
    ['a 10,000-line file', bigFile(1, 10_000), REVIEW_PAGES],
  ])('%s', async (label, diff, pages) => {
    const review = await timed(() => drawer.review(diff, label));
    check(label.replace(/[^a-z0-9]+/gi, '-').slice(0, 40), review.pictures);
    expect(review.pictures).toHaveLength(pages);
  });
});
