/**
 * What a service remembers per lock key (a line's pace, its standing-line state) is kept for at most this
 * many keys: keys can come from requests, and memory must not grow with every one a client invents.
 */
export const MAX_REMEMBERED_KEYS = 4_096;

/** Sets `key`, first forgetting the key set longest ago (a Map keeps insertion order) when `max` are kept. */
export function setBounded<K, V>(map: Map<K, V>, key: K, value: V, max = MAX_REMEMBERED_KEYS): void {
  if (!map.has(key) && map.size >= max) map.delete(map.keys().next().value as K);
  map.set(key, value);
}
