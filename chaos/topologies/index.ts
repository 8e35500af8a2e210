/** The topologies a run can use, by the name `--topology` gives. */
import { Redlock } from './redlock';
import { Sentinel } from './sentinel';
import { SingleServer } from './single-server';
import type { Topology, TopologyName } from './topology';

export function topologyNamed(name: TopologyName): Topology {
  if (name === 'redlock') return new Redlock();
  if (name === 'sentinel') return new Sentinel();
  return new SingleServer();
}
