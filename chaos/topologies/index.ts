/** The topologies a run can use, by the name `--topology` gives. */
import { Redlock } from './redlock';
import { SingleServer } from './single-server';
import type { Topology, TopologyName } from './topology';

export function topologyNamed(name: TopologyName): Topology {
  return name === 'redlock' ? new Redlock() : new SingleServer();
}
