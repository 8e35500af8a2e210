/**
 * Tells the application, once per server and kind of risk, when the Redis its locks live on can evict
 * them or lose them on a restart or failover (lib/protocol/server-info.ts). Checked when each connection
 * becomes ready (start-up, and again after every reconnect, since a server may have been replaced or
 * reconfigured meanwhile) and whenever someone asks, such as the health indicator. A risk already
 * reported is not reported again: a log that repeats itself every reconnect gets ignored.
 */
import { connectionOf, type RedisClient } from '../clients';
import type { RedisConnection } from '../protocol/connection';
import { checkServer, type ServerReport, type ServerRisk } from '../protocol/server-info';

export type WarningHandler = (warning: ServerRisk) => void;
/** What the checks report, for the service and its users: the engine reaches the protocol through the stores. */
export type { ServerFacts, ServerReport, ServerRisk, ServerRiskCode } from '../protocol/server-info';

export class ServerWatch {
  private readonly reported = new Set<string>();
  private readonly detach: Array<() => void> = [];
  private readonly clients: readonly RedisConnection[];

  /**
   * @param clients the connections locks are written on: one Redis or Cluster, or a quorum's masters
   * @param onWarning where new risks go; without it nothing is checked unless asked (`check`)
   */
  constructor(
    clients: readonly RedisClient[],
    private readonly quorum: boolean,
    private readonly timeout: number,
    private readonly onWarning: WarningHandler | undefined,
    /** `replicas.count`, when grants are acknowledged by replicas (changes what replication risks). */
    private readonly replicas?: number,
  ) {
    this.clients = clients.map(connectionOf);
    if (!onWarning) return;
    for (const client of this.clients) {
      const onReady = (): void => {
        this.checkClient(client).catch(() => {});
      };
      this.detach.push(client.on('ready', onReady));
      if (client.state === 'ready') onReady();
    }
  }

  /** Every lock server's facts and risks (each master of a Cluster); reports risks not reported yet. */
  async check(timeout = this.timeout): Promise<ServerReport[]> {
    const reports = await Promise.all(this.clients.map((client) => this.checkClient(client, timeout)));
    return reports.flat();
  }

  /** Stops checking on reconnects. */
  close(): void {
    for (const detach of this.detach.splice(0)) detach();
  }

  private async checkClient(client: RedisConnection, timeout = this.timeout): Promise<ServerReport[]> {
    let servers: RedisConnection[];
    try {
      servers = await client.masters(timeout);
    } catch {
      return [];
    }
    const reports = await Promise.all(
      servers.map((server) => checkServer(server, { timeout, quorum: this.quorum, replicas: this.replicas })),
    );
    for (const report of reports) for (const risk of report.risks) this.report(risk);
    return reports;
  }

  private report(risk: ServerRisk): void {
    const id = `${risk.server}\n${risk.code}`;
    if (!this.onWarning || this.reported.has(id)) return;
    this.reported.add(id);
    try {
      this.onWarning(risk);
    } catch {
      // A failing handler must not break lock calls or the health check that ran the INFO.
    }
  }
}
