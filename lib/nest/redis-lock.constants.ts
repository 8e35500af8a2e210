/** Metadata keys of the Nest layer, namespaced so they never collide with an application's own. */

/** Metadata on a method wrapped by @Locked: its compiled spec, read by the start-up check. */
export const LOCKED_METADATA = 'nestjs-redis-lock:locked';
/** Metadata on a route handler for LockInterceptor used as a Nest interceptor (@LockedRoute). */
export const LOCKED_ROUTE_METADATA = 'nestjs-redis-lock:locked-route';
