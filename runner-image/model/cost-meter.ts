// A run's model spend: each model response's usage as Claude Code reports it with the assistant
// message (its output tokens as the response began), then at the end of each turn the turn's usage
// with the final output tokens; priced with the table below. Claude Code's own total cost is not
// used: for a resumed conversation it includes the earlier runs. Usage that is missing, negative or
// absurd counts as nothing.

/** US dollars per million tokens. One definition; a model not listed is priced as the dearest. */
export const MODEL_PRICES: Record<string, { input: number; output: number; cacheWrite: number; cacheRead: number }> = {
  opus: { input: 15, output: 75, cacheWrite: 18.75, cacheRead: 1.5 },
  sonnet: { input: 3, output: 15, cacheWrite: 3.75, cacheRead: 0.3 },
  haiku: { input: 1, output: 5, cacheWrite: 1.25, cacheRead: 0.1 },
};
const DEAREST = MODEL_PRICES.opus!;

/** More tokens than one response can hold: a report this large is wrong, not expensive. */
const MAX_TOKENS_PER_RESPONSE = 10_000_000;

export interface Usage {
  input_tokens?: unknown;
  output_tokens?: unknown;
  cache_creation_input_tokens?: unknown;
  cache_read_input_tokens?: unknown;
}

const tokens = (n: unknown) =>
  typeof n === 'number' && Number.isFinite(n) && n > 0 && n <= MAX_TOKENS_PER_RESPONSE ? n : 0;

export function priceOf(model: string, usage: Usage): number {
  const family = Object.keys(MODEL_PRICES).find((name) => model.toLowerCase().includes(name));
  const price = family ? MODEL_PRICES[family]! : DEAREST;
  return (
    (tokens(usage.input_tokens) * price.input +
      tokens(usage.output_tokens) * price.output +
      tokens(usage.cache_creation_input_tokens) * price.cacheWrite +
      tokens(usage.cache_read_input_tokens) * price.cacheRead) /
    1_000_000
  );
}

/**
 * Sums the responses of one run (a response reported twice — once per content block — counts
 * once; a finished turn counts as its own total) and says when the next pause is due: at each
 * multiple of `pauseUsd` (0: never).
 */
export class CostMeter {
  private readonly seen = new Set<string>();
  private readonly pauseUsd: number;
  private nextPauseAt: number;
  /** Turns that ended, at their totals. */
  private settledUsd = 0;
  /** The turn under way, at its responses' first reports. */
  private turnUsd = 0;
  /** The model of the latest response: what a turn's total is priced as. */
  private model = '';

  constructor(pauseUsd: number) {
    this.pauseUsd = pauseUsd > 0 && Number.isFinite(pauseUsd) ? pauseUsd : 0;
    this.nextPauseAt = this.pauseUsd || Infinity;
  }

  /** Adds one response's usage; false when it was already counted. */
  add(responseId: string, model: string, usage: Usage): boolean {
    if (this.seen.has(responseId)) return false;
    this.seen.add(responseId);
    this.model = model;
    this.turnUsd += priceOf(model, usage);
    return true;
  }

  /** A turn ended with this total usage; never below what its responses already counted. */
  endTurn(usage: Usage): void {
    this.settledUsd += Math.max(this.turnUsd, priceOf(this.model, usage));
    this.turnUsd = 0;
  }

  /** Spend metered elsewhere (the model proxy), counted as it comes. */
  addSpend(usd: number): void {
    if (usd > 0 && Number.isFinite(usd)) this.settledUsd += usd;
  }

  get spentUsd(): number {
    return this.settledUsd + this.turnUsd;
  }

  /** Whether the run must ask before going on. */
  get pauseDue(): boolean {
    return this.spentUsd >= this.nextPauseAt;
  }

  /** The user said continue: the next pause is at the next multiple above the spend. */
  resume(): void {
    this.nextPauseAt = (Math.floor(this.spentUsd / this.pauseUsd) + 1) * this.pauseUsd;
  }
}
