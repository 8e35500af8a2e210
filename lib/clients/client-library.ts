/**
 * What the lock needs to know of one Redis client library, and nothing more: how to tell its clients
 * apart, the lock's connection (lib/protocol/connection.ts) on one of them, and how to open and close
 * connections of its own from the Nest module's `url` / `redis` options. Each library is one
 * folder beside this file that exports one such description; index.ts lists them. The libraries are
 * optional peer dependencies, so a description never imports its library: the application's clients are
 * all it uses, and its own connections come from the package as index.ts loads it.
 */
import type { RedisConnection } from '../protocol/connection';

export interface ClientLibrary<Client extends object, Name extends string = string> {
  /** Its name in messages and in the module's choice of library. */
  readonly name: Name;
  /** The npm package an application installs for it. */
  readonly packageName: string;
  /**
   * Whether `value` is a client of this library, told by its shape, never by `instanceof`: an
   * application may load a second copy of the library (a monorepo, a bundled dependency), whose classes
   * are not the ones this library would import.
   */
  isClient(value: unknown): value is Client;
  /** The lock's connection on `client` (made once per client by index.ts). */
  connection(client: Client): RedisConnection;
  /**
   * The connections for `request`, made with `loaded` (the package, as `require` returned it), not
   * connected yet. Throws LockUsageError when the library refuses the options.
   */
  openOwned(loaded: unknown, request: OwnedRequest): OwnedConnection[];
}

/** The connections an application asked the module to open, and how their outages are reported. */
export interface OwnedRequest {
  /** One connection per entry; `undefined`: from `options` alone. */
  readonly urls: ReadonlyArray<string | undefined>;
  /** The library's own connection options (ioredis' RedisOptions), given by the application. */
  readonly options: Record<string, unknown> | undefined;
  /** Who asks, for messages: the module's label. */
  readonly label: string;
  /** Makes the reporter of one connection's outages (each connection gets its own). */
  readonly outages: () => OutageReporter;
}

/** Told of a connection's outages: `down` on each failure (an error, a lost connection), `back` once ready. */
export interface OutageReporter {
  down(why: string): void;
  back(): void;
}

/** A connection the module opened: connected in onModuleInit, closed on shutdown. */
export interface OwnedConnection {
  readonly client: object;
  /** Starts connecting; a failure is reported and retried by the client, never thrown. */
  connect(): void;
  /** Closes it, resolving once its socket is closed; never waits on Redis for long. */
  close(): Promise<void>;
  /** Drops it at once (the module failed to start). */
  drop(): void;
}
