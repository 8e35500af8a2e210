/**
 * Headers on every response of the board, its errors and its guard's refusals included: its JSON
 * echoes keys a request chose, so no browser may read a response as anything but what its type says
 * (nosniff), nor run or load anything from one (a policy allowing nothing). The page replaces the
 * policy with its own (BOARD_CSP), which lets it load its script and style.
 */
const HEADERS: ReadonlyArray<readonly [string, string]> = [
  ['X-Content-Type-Options', 'nosniff'],
  ['Content-Security-Policy', "default-src 'none'; frame-ancestors 'none'"],
];

/** Nest middleware (Express's response, or Fastify's raw one: both are Node's ServerResponse). */
export function boardHeaders(
  _request: unknown,
  response: { setHeader(name: string, value: string): unknown },
  next: () => void,
): void {
  for (const [name, value] of HEADERS) response.setHeader(name, value);
  next();
}
