// HTTP clients in a process of their own: each call is a POST the test names, sent when told, whose client
// gives up when told (its socket is destroyed, as a client's timeout does). Reports each answer.
import http from 'node:http';
import { onMessage, ready, send, workerArgs } from '../support/worker-runtime';

export type CallerCommand =
  | { type: 'send'; call: string; port: number; path: string }
  | { type: 'give-up'; call: string };

export type CallerReport =
  | { type: 'ready' }
  | { type: 'answered'; call: string; status: number; body: string }
  | { type: 'gave-up'; call: string }
  | { type: 'failed'; call: string; message: string };

workerArgs<Record<string, never>>();
const open = new Map<string, http.ClientRequest>();

onMessage((command: CallerCommand) => {
  if (command.type === 'give-up') {
    open.get(command.call)?.destroy();
    open.delete(command.call);
    send({ type: 'gave-up', call: command.call } satisfies CallerReport);
    return;
  }
  const { call } = command;
  const request = http.request({
    host: '127.0.0.1',
    port: command.port,
    path: command.path,
    method: 'POST',
    headers: { 'x-call': call },
  });
  open.set(call, request);
  request.on('response', (response) => {
    let body = '';
    response.setEncoding('utf8');
    response.on('data', (chunk: string) => {
      body += chunk;
    });
    response.on('end', () => {
      open.delete(call);
      send({ type: 'answered', call, status: response.statusCode ?? 0, body } satisfies CallerReport);
    });
  });
  // A request this worker destroyed ends in an error too: that one is reported as gave-up, above.
  request.on('error', (error) => {
    if (open.delete(call)) send({ type: 'failed', call, message: error.message } satisfies CallerReport);
  });
  request.end();
});
ready();
