// The open connections of each runner Pod's callers (its supervisor and its agents), so that a Pod that
// ends — deleted, finished, or another of the same name — loses them at once: its credentials stop
// working for new connections (callers.ts), and a tunnel opened before keeps nothing open either.
export interface Closable {
  destroy(): void;
}

export class PodConnections {
  private readonly byPod = new Map<string, Set<Closable>>();

  /** Tracks a connection of the Pod's callers; returns its release. */
  track(pod: string, connection: Closable): () => void {
    const open = this.byPod.get(pod) ?? new Set<Closable>();
    this.byPod.set(pod, open);
    open.add(connection);
    return () => {
      open.delete(connection);
      if (open.size === 0 && this.byPod.get(pod) === open) this.byPod.delete(pod);
    };
  }

  /** Closes every connection of the Pod's callers. */
  endPod(pod: string): void {
    const open = this.byPod.get(pod);
    this.byPod.delete(pod);
    for (const connection of open ?? []) connection.destroy();
  }

  openCount(pod: string): number {
    return this.byPod.get(pod)?.size ?? 0;
  }
}
