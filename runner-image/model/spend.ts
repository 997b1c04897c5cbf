// The model proxy's spend, passed to the run that meters it: the proxy sees every Messages API
// call from the agent container (Claude Code's own and anything else's), so when it is in use its
// figure is the run's spend. While a cost pause is open the proxy refuses further calls.

export class ModelSpend {
  private listener: ((usd: number) => void) | undefined;
  private unheard = 0;
  /** Set by the run while it waits for "continue": calls are then refused, not forwarded. */
  paused = false;

  /** Spend of one forwarded response; held until a run listens. */
  add(usd: number): void {
    if (!(usd > 0) || !Number.isFinite(usd)) return;
    if (this.listener) this.listener(usd);
    else this.unheard += usd;
  }

  listen(listener: (usd: number) => void): void {
    this.listener = listener;
    if (this.unheard > 0) listener(this.unheard);
    this.unheard = 0;
  }
}
