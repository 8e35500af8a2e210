/**
 * Faults on the network between the workers and one lock server, through the TCP proxy they reach it
 * by (chaos/proxy.ts): added latency both ways, a freeze (a partition that heals), and a reset of every
 * connection.
 */
import { hr } from '../common';
import { type FaultAction, holdThenHeal } from './kinds';

export const proxyLatency: FaultAction = async (fault, host, prng, node) => {
  const latency = prng.int(10, Math.round(host.ttl / 2));
  const ms = prng.int(500, 2_500);
  node.proxy.setLatency(latency);
  fault.t0 = hr();
  fault.detail = { latency, ms };
  return holdThenHeal(fault, ms, () => node.proxy.setLatency(0));
};

export const proxyFreeze: FaultAction = async (fault, _host, prng, node) => {
  const ms = prng.int(200, 1_500);
  node.proxy.freeze();
  fault.t0 = hr();
  fault.detail = { ms };
  return holdThenHeal(fault, ms, () => node.proxy.thaw());
};

export const proxyDrop: FaultAction = async (fault, _host, _prng, node) => {
  fault.t0 = hr();
  fault.detail = { dropped: node.proxy.dropAll() };
  fault.t1 = hr();
};
