/**
 * Coalescing of requests per channel, so that stale work never queues: on a channel at most
 * one request runs and at most one waits; a newer request replaces the waiting one, which
 * rejects with a StaleRequestError. A dragged slider thus costs at most the request in flight
 * plus the latest one. Requests without a channel start at once (the worker runs them in order).
 */

/** The rejection of a request replaced by a newer one on its channel (name 'AbortError'). */
export class StaleRequestError extends Error {
  constructor(channel: string) {
    super(`superseded by a newer request on channel '${channel}'`);
    this.name = 'AbortError';
  }
}

interface Waiting {
  start: () => Promise<unknown>;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
}

export class Coalescer {
  private readonly busy = new Set<string>();
  private readonly waiting = new Map<string, Waiting>();

  /** Runs start() now, or once the channel is free unless a newer submit replaces it first. */
  submit<T>(channel: string | undefined, start: () => Promise<T>): Promise<T> {
    if (channel === undefined) return new Promise<T>((resolve) => resolve(start()));
    if (!this.busy.has(channel)) return this.run(channel, start);
    return new Promise<T>((resolve, reject) => {
      this.waiting.get(channel)?.reject(new StaleRequestError(channel));
      this.waiting.set(channel, { start, resolve: resolve as (v: unknown) => void, reject });
    });
  }

  /** Requests waiting (not yet started) on a channel: 0 or 1. */
  pending(channel: string): number {
    return this.waiting.has(channel) ? 1 : 0;
  }

  private run<T>(channel: string, start: () => Promise<T>): Promise<T> {
    this.busy.add(channel);
    const p = new Promise<T>((resolve) => resolve(start()));  // a synchronous throw rejects
    const next = () => {
      this.busy.delete(channel);
      const w = this.waiting.get(channel);
      if (!w) return;
      this.waiting.delete(channel);
      this.run(channel, w.start).then(w.resolve, w.reject);
    };
    p.then(next, next);
    return p;
  }
}
