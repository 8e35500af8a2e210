// One HTTP request to a local server, for the shell checks (scripts/sample-startup-check.sh):
// `node scripts/local-request.mjs [POST] <host:port/path>`. Prints the body; exits 1 on an answer of
// 400 or more, on no answer within 2 s, or on a refused connection, so a check can retry it.
import { request } from 'node:http';

const [first, second] = process.argv.slice(2);
const [method, target] = second === undefined ? ['GET', first] : [first, second];
const req = request(`http://${target}`, { method, agent: false, timeout: 2_000 }, (res) => {
  let body = '';
  res.setEncoding('utf8');
  res.on('data', (chunk) => (body += chunk));
  res.on('end', () => {
    process.stdout.write(body);
    process.exitCode = (res.statusCode ?? 500) >= 400 ? 1 : 0;
  });
});
req.on('timeout', () => req.destroy(new Error('no answer within 2 s')));
req.on('error', () => {
  process.exitCode = 1;
});
req.end();
