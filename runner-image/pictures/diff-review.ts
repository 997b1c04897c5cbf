// The diff as the phone sees it: up to REVIEW_PAGES pictures with the review, and the pages of one
// file when the phone asks for it (`diff <file>`, spec.diffRequests) while the changes await review.
import pLimit from 'p-limit';
import type { Logger } from 'pino';
import { matchDiffFile } from '../../common/session/diff-files.ts';
import { LIMITS, type Session } from '../../common/session/schema.ts';
import { paginate, type Pagination } from './diff-layout.ts';
import { loadHighlighter, pageHtml, type Highlighter } from './diff-html.ts';
import { parseDiff, type FileDiff } from './diff-parse.ts';
import { renderPages, type Browsers, type Picture } from './chromium.ts';
import type { StatusWriter } from '../status.ts';

export const REVIEW_PAGES = 3;

export interface Review extends Pagination {
  files: FileDiff[];
  pictures: Picture[];
}

const plural = (n: number, word: string) => `${n.toLocaleString('en-US')} more ${word}${n === 1 ? '' : 's'}`;

/** What the last page says it leaves out. */
function footer(p: Pagination): string | undefined {
  const linesLeft = p.pages.at(-1)?.sections.at(-1)?.linesLeft ?? 0;
  const parts = [
    linesLeft ? `${plural(linesLeft, 'line')} of this file not shown.` : '',
    p.hidden.length ? `${plural(p.hidden.length, 'file')} not shown — reply diff <file>.` : '',
  ].filter(Boolean);
  return parts.length ? parts.join(' ') : undefined;
}

export class DiffDrawer {
  private readonly browsers: Browsers;
  private highlighter: Promise<Highlighter> | undefined;

  constructor(browsers: Browsers) {
    this.browsers = browsers;
  }

  /** The review pages of a whole diff (already redacted). */
  async review(diff: string, title: string): Promise<Review> {
    const files = parseDiff(diff);
    const pagination = paginate(files, REVIEW_PAGES);
    return { ...pagination, files, pictures: await this.draw(pagination, title) };
  }

  /** The pages of one file of a parsed diff. */
  async file(file: FileDiff): Promise<Picture[]> {
    return this.draw(paginate([file], REVIEW_PAGES), `${file.added + file.deleted} lines changed`);
  }

  private async draw(pagination: Pagination, title: string): Promise<Picture[]> {
    this.highlighter ??= loadHighlighter();
    const highlighter = await this.highlighter;
    const count = pagination.pages.length;
    const html = pagination.pages.map((page, i) =>
      pageHtml(
        page,
        {
          title,
          counter: count > 1 ? `${i + 1}/${count}` : '',
          footer: i === count - 1 ? footer(pagination) : undefined,
        },
        highlighter,
      ),
    );
    return renderPages(this.browsers, html);
  }
}

export const diffFileNames = (files: FileDiff[]) =>
  files.slice(0, LIMITS.diffFileNames).map((f) => f.name.slice(0, LIMITS.diffFileNameChars));

export interface DiffRequestDeps {
  status: StatusWriter;
  drawer: DiffDrawer;
  files: FileDiff[];
  /** Stores the pictures answering request `request` (1-based) and lists them in status.result.media. */
  publish: (pictures: Picture[], request: number, name: string) => Promise<void>;
  log: Logger;
}

/**
 * Answers spec.diffRequests one at a time, in order, until stopped. A request is marked answered
 * (status.result.diffAnswered) with its pages, or without pages when the file is unknown or could
 * not be drawn: the relay tells the phone either way.
 */
export function answerDiffRequests(deps: DiffRequestDeps): () => void {
  let answered = deps.status.session?.status?.result?.diffAnswered ?? 0;
  const inOrder = pLimit(1);
  let stopped = false;
  const answer = async (asked: string, request: number) => {
    const name = matchDiffFile(
      deps.files.map((f) => f.name),
      asked,
    );
    const file = deps.files.find((f) => f.name === name);
    try {
      if (file && !stopped) await deps.publish(await deps.drawer.file(file), request, file.name);
    } catch (error) {
      deps.log.warn({ err: error, request }, 'diff pages for a requested file not drawn');
    }
    deps.status.setResult({ diffAnswered: request });
  };
  const look = (session: Session) => {
    const asked = session.spec.diffRequests ?? [];
    while (answered < Math.min(asked.length, LIMITS.diffRequests)) {
      const request = ++answered;
      void inOrder(() => (stopped ? undefined : answer(asked[request - 1]!, request)));
    }
  };
  const off = deps.status.onChange(look);
  if (deps.status.session) look(deps.status.session);
  return () => {
    stopped = true;
    off();
  };
}
