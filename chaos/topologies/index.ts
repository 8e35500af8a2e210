/** The topologies a run can use, by the name `--topology` gives. */
import { Redlock } from './redlock';
import { Sentinel } from './sentinel';
import { SingleServer } from './single-server';
import type { Topology, TopologyName } from './topology';

/** What a topology may be given beyond its name: the sentinels' down-after-milliseconds. */
export interface TopologySettings {
  sentinelDownAfterMs: number;
}

export function topologyNamed(name: TopologyName, settings: TopologySettings): Topology {
  if (name === 'redlock') return new Redlock();
  if (name === 'sentinel') return new Sentinel(settings.sentinelDownAfterMs);
  return new SingleServer();
}
