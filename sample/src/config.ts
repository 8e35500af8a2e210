/**
 * The sample's configuration, from the environment, checked at start-up: a bad value stops the app
 * with a message saying which variable is wrong and what it should look like.
 */
export interface SampleConfig {
  /**
   * Unset: use 127.0.0.1:6379 if it answers, else start a throwaway redis-server, else keep locks and data
   * in memory (see embedded-redis).
   */
  redisUrl: string | undefined;
  port: number;
  /** A name for this instance in responses and logs (several run side by side in the demo). */
  instance: string;
  /** How slow the pretend database is, ms: what makes a cache stampede expensive. */
  dbDelayMs: number;
  /** BOARD_PASSWORD: the lock board at /locks asks for it (any user name); unset, it is open. */
  boardPassword: string | undefined;
}

export class ConfigError extends Error {}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): SampleConfig {
  const problems: string[] = [];
  const redisUrl = env.REDIS_URL?.trim() || undefined;
  if (redisUrl !== undefined && !/^rediss?:\/\/[^\s]+$/.test(redisUrl)) {
    problems.push(`REDIS_URL must look like redis://host:6379 (or rediss:// for TLS), got "${redisUrl}"`);
  }
  const integer = (name: string, fallback: number, min: number, max: number): number => {
    const raw = env[name]?.trim();
    if (raw === undefined || raw === '') return fallback;
    const value = Number(raw);
    if (!Number.isInteger(value) || value < min || value > max) {
      problems.push(`${name} must be an integer from ${min} to ${max}, got "${raw}"`);
    }
    return value;
  };
  const port = integer('PORT', 3000, 1, 65_535);
  const dbDelayMs = integer('DB_DELAY_MS', 200, 0, 60_000);
  if (problems.length > 0) throw new ConfigError(`Invalid configuration:\n  - ${problems.join('\n  - ')}`);
  return {
    redisUrl,
    port,
    dbDelayMs,
    instance: env.INSTANCE?.trim() || `port-${port}`,
    boardPassword: env.BOARD_PASSWORD || undefined,
  };
}
