/**
 * Faults on the network between the workers and the lock's Redis, through the TCP proxy they connect
 * to (chaos/proxy.ts): added latency both ways, a freeze (a partition that heals), and a reset of every
 * connection.
 */
import { hr } from '../common';
import { type FaultAction, holdThenHeal } from './kinds';

export const proxyLatency: FaultAction = async (fault, host, prng) => {
  const latency = prng.int(10, Math.round(host.ttl / 2));
  const ms = prng.int(500, 2_500);
  host.proxy.setLatency(latency);
  fault.t0 = hr();
  fault.detail = { latency, ms };
  return holdThenHeal(fault, ms, () => host.proxy.setLatency(0));
};

export const proxyFreeze: FaultAction = async (fault, host, prng) => {
  const ms = prng.int(200, 1_500);
  host.proxy.freeze();
  fault.t0 = hr();
  fault.detail = { ms };
  return holdThenHeal(fault, ms, () => host.proxy.thaw());
};

export const proxyDrop: FaultAction = async (fault, host) => {
  fault.t0 = hr();
  fault.detail = { dropped: host.proxy.dropAll() };
  fault.t1 = hr();
};
