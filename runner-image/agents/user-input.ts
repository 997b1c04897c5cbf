// The streaming prompt for query(): user turns pushed while the agent runs, closed when done.
import type { SDKUserMessage } from '@anthropic-ai/claude-agent-sdk';
import type { AgentImage } from './types.ts';

/** A user turn; pictures go first, as image blocks, and the text after them. */
export const userMessage = (text: string, images: readonly AgentImage[] = []): SDKUserMessage => ({
  type: 'user',
  message: {
    role: 'user',
    content: images.length
      ? [
          ...images.map((i) => ({
            type: 'image' as const,
            source: { type: 'base64' as const, media_type: i.mediaType, data: i.data },
          })),
          { type: 'text' as const, text },
        ]
      : text,
  },
  parent_tool_use_id: null,
});

export class UserInput implements AsyncIterable<SDKUserMessage> {
  private readonly queue: SDKUserMessage[] = [];
  private waiter: (() => void) | undefined;
  private closed = false;

  push(message: SDKUserMessage): void {
    if (this.closed) return;
    this.queue.push(message);
    this.waiter?.();
  }

  close(): void {
    this.closed = true;
    this.waiter?.();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<SDKUserMessage> {
    for (;;) {
      const next = this.queue.shift();
      if (next) {
        yield next;
        continue;
      }
      if (this.closed) return;
      await new Promise<void>((resolve) => (this.waiter = resolve));
      this.waiter = undefined;
    }
  }
}
