/**
 * How long a route's clients wait before they give up, learnt from the ones that did. Most HTTP clients
 * send no deadline, yet each gives up after a timeout of its own; a section granted in its last few ms
 * runs for nobody. Each request that made a locked call and whose client closed the connection before
 * its answer was written tells its age then (from its arrival): once a route has seen enough such
 * departures lately, its requests that sent no deadline of their own are given one, their arrival plus
 * the patience of the route's clients, which admission then cuts by as it does a sent deadline (the
 * key's usual hold kept back, the door, a 503 with Retry-After).
 *
 * The lower quartile of the latest departures, not their mean: a route's clients differ, and a section
 * is wasted on the impatient ones first. A route's last departure older than FRESH_MS forgets it, so a
 * burst long past does not cut a patient client today; a client that sent its deadline keeps its own.
 */

/** Departures kept per route; the quartile is taken over these. */
const SAMPLES = 32;
/** Departures seen before a route's patience is used: a lone reload is not a pattern. */
const MIN_DEPARTURES = 8;
/** How long the latest departure vouches for the patience learnt, ms. */
const FRESH_MS = 60_000;

/** One route's clients. */
export class ClientPatience {
  private readonly ages: number[] = [];
  private next = 0;
  private lastAt = Number.NEGATIVE_INFINITY;
  private quartile = 0;

  /** A client of this route left `ageMs` after its request arrived, at `at` (ms since the epoch). */
  departed(ageMs: number, at: number): void {
    if (!(ageMs >= 0)) return;
    if (this.ages.length < SAMPLES) this.ages.push(ageMs);
    else this.ages[this.next] = ageMs;
    this.next = (this.next + 1) % SAMPLES;
    this.lastAt = at;
    // On each departure, not on each request: departures are the rarer event.
    const sorted = [...this.ages].sort((a, b) => a - b);
    this.quartile = sorted[Math.floor((sorted.length - 1) / 4)];
  }

  /** How long this route's clients wait, ms from arrival, as seen at `at`; undefined while not known. */
  of(at: number): number | undefined {
    if (this.ages.length < MIN_DEPARTURES || at - this.lastAt > FRESH_MS) return undefined;
    return this.quartile;
  }
}

/** Each route's clients, by its handler (a route is a method of the application: no bound is needed). */
export class RoutePatience {
  private readonly routes = new WeakMap<object, ClientPatience>();

  of(handler: object): ClientPatience {
    let patience = this.routes.get(handler);
    if (!patience) {
      patience = new ClientPatience();
      this.routes.set(handler, patience);
    }
    return patience;
  }
}
