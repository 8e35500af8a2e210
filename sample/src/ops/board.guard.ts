/**
 * Who may open the lock board: with BOARD_PASSWORD set, HTTP Basic authentication (any user name, that
 * password), which a browser asks for by itself; unset, everyone who reaches the app (the sample listens
 * on 127.0.0.1 only). Any Nest guard works here: an application would use its own authentication.
 */

import { timingSafeEqual } from 'node:crypto';
import {
  type CanActivate,
  type ExecutionContext,
  Inject,
  Injectable,
  UnauthorizedException,
} from '@nestjs/common';
import { SAMPLE_OPTIONS, type SampleOptions } from '../data';

@Injectable()
export class BoardGuard implements CanActivate {
  constructor(@Inject(SAMPLE_OPTIONS) private readonly options: SampleOptions) {}

  canActivate(context: ExecutionContext): boolean {
    const password = this.options.boardPassword;
    if (password === undefined) return true;
    const http = context.switchToHttp();
    const header =
      http.getRequest<{ headers: Record<string, string | undefined> }>().headers.authorization ?? '';
    const given = header.startsWith('Basic ')
      ? Buffer.from(header.slice(6), 'base64').toString().split(':').slice(1).join(':')
      : '';
    const [a, b] = [Buffer.from(given), Buffer.from(password)];
    if (a.length === b.length && timingSafeEqual(a, b)) return true;
    // Express and Fastify responses both have header(): the browser then asks for the password.
    http
      .getResponse<{ header(name: string, value: string): void }>()
      .header('WWW-Authenticate', 'Basic realm="locks"');
    throw new UnauthorizedException('The lock board needs the BOARD_PASSWORD (any user name).');
  }
}
