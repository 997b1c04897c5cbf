// Reads the usage of one Messages API response as it streams through the model proxy, without
// holding the stream back: an SSE stream's `message_start` (model, input tokens) and
// `message_delta` (output tokens so far) events, or a JSON body's `model` and `usage`. What was
// received counts even when the response stops early. Numbers are bounded by priceOf.
import { priceOf, type Usage } from './cost-meter.ts';

/** More than any usage event or JSON body needs to be read for its usage. */
const MAX_BUFFERED = 1_000_000;

export class UsageTap {
  private model = '';
  private usage: Usage = {};
  private sse: boolean;
  private pending = '';
  private overflowed = false;
  private readonly decoder = new TextDecoder();

  constructor(contentType: string | undefined) {
    this.sse = (contentType ?? '').includes('text/event-stream');
  }

  /** Feeds one chunk of the response body as it passes. */
  write(chunk: Buffer): void {
    if (this.overflowed) return;
    this.pending += this.decoder.decode(chunk, { stream: true });
    if (this.sse) this.readEvents();
    if (this.pending.length > MAX_BUFFERED) {
      this.overflowed = true;
      this.pending = '';
    }
  }

  /** The spend of what was received, in US dollars. */
  end(): number {
    if (!this.sse && !this.overflowed) this.take(parse(this.pending));
    return priceOf(this.model || 'unknown', this.usage);
  }

  private readEvents(): void {
    const lines = this.pending.split('\n');
    this.pending = lines.pop()!;
    for (const line of lines) if (line.startsWith('data:')) this.take(parse(line.slice(5)));
  }

  private take(data: unknown): void {
    if (!isObject(data)) return;
    const message = isObject(data.message) ? data.message : data;
    if (typeof message.model === 'string') this.model = message.model.slice(0, 200);
    const usage = isObject(data.usage) ? data.usage : isObject(message.usage) ? message.usage : undefined;
    if (usage) this.usage = { ...this.usage, ...definedTokens(usage) };
  }
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The token counts a usage object names; later events replace earlier counts. */
function definedTokens(usage: Record<string, unknown>): Usage {
  const keys = ['input_tokens', 'output_tokens', 'cache_creation_input_tokens', 'cache_read_input_tokens'] as const;
  return Object.fromEntries(keys.filter((key) => typeof usage[key] === 'number').map((key) => [key, usage[key]]));
}

function parse(text: string): unknown {
  try {
    return JSON.parse(text.trim());
  } catch {
    return undefined;
  }
}
