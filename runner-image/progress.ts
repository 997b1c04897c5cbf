// Turns agent events into short progress lines: `::progress:: text` lines from the agent's output
// and milestones from tool use (reading, editing a file, running tests), de-duplicated.
import { basename } from 'node:path';
import type { AgentEvent } from './agents/types.ts';

const PROGRESS_LINE = /^\s*::progress::\s*(.+)$/;
const TEST_COMMAND = /\b(test|tests|vitest|jest|pytest|mocha|go test|cargo test|rspec|phpunit|make check)\b/;
/** The plan file Claude Code writes in plan mode ($CLAUDE_CONFIG_DIR/plans/<slug>.md, the config dir $HOME/.claude). */
const PLAN_FILE = /\/\.claude\/plans\/[^/]+\.md$/;
const short = (text: string, max = 80) => (text.length <= max ? text : `${text.slice(0, max - 1)}…`);

export function milestone(tool: string, input: unknown): string | undefined {
  const i = (input && typeof input === 'object' ? input : {}) as Record<string, unknown>;
  const path =
    typeof i.file_path === 'string' ? i.file_path : typeof i.notebook_path === 'string' ? i.notebook_path : undefined;
  switch (tool) {
    case 'Edit':
    case 'MultiEdit':
    case 'Write':
    case 'NotebookEdit':
      if (path && PLAN_FILE.test(path)) return 'Writing the plan';
      return path ? `Editing ${basename(path)}` : undefined;
    case 'Read':
      return path ? `Reading ${basename(path)}` : undefined;
    case 'Bash': {
      const command = typeof i.command === 'string' ? i.command.replace(/\s+/g, ' ').trim() : '';
      return TEST_COMMAND.test(command) ? `Running ${short(command, 60)}` : undefined;
    }
    case 'WebFetch':
      return typeof i.url === 'string' ? `Fetching ${short(i.url, 60)}` : undefined;
    default:
      return undefined;
  }
}

/** Progress lines found in one event (0..n). */
export function progressLines(event: AgentEvent): string[] {
  switch (event.type) {
    case 'progress':
      return [event.text];
    case 'text':
      return event.text
        .split('\n')
        .flatMap((line) => PROGRESS_LINE.exec(line)?.[1]?.trim() ?? [])
        .filter(Boolean);
    case 'tool_use': {
      const text = milestone(event.tool, event.input);
      return text ? [text] : [];
    }
    case 'session':
    case 'tool_done':
    case 'usage':
    case 'turn-usage':
      return [];
  }
}

/** Drops a line that repeats one of the last `window` lines. */
export class Deduper {
  private readonly recent: string[] = [];
  private readonly window: number;

  constructor(window = 5) {
    this.window = window;
  }

  accept(text: string): boolean {
    const key = text.trim().toLowerCase();
    if (!key || this.recent.includes(key)) return false;
    this.recent.push(key);
    if (this.recent.length > this.window) this.recent.shift();
    return true;
  }
}
