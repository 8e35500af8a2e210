/**
 * The lock board's routes under the path it is mounted at: the page, its script and stylesheet (served
 * apart, so the page's Content-Security-Policy allows no inline script), the JSON API, and the forced
 * release when the board is not read-only. Works alike on Express and Fastify: only Nest's decorators.
 */
import {
  BadRequestException,
  Body,
  Controller,
  ForbiddenException,
  Get,
  Header,
  Headers,
  HttpCode,
  Inject,
  Logger,
  NotFoundException,
  Param,
  Post,
  Query,
  Req,
  type Type,
  UseGuards,
} from '@nestjs/common';
import { LockUsageError } from '../errors/lock-usage.error';
import { quote } from '../errors/log-text';
import { BoardData, type BoardLock, type BoardView } from './board-data';
import { BOARD_OPTIONS, BoardGuard } from './board-guard';
import type { ResolvedBoardOptions } from './board-options';
import { BOARD_SCRIPT, BOARD_STYLE, boardHtml } from './board-page';

/** Nothing but the page's own script, style and API: a key shown on it can never run as code. */
export const BOARD_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; " +
  "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const MAX_FILTER = 200;

/** The path the page was asked at (with any global prefix), without query or trailing slash. */
function basePathOf(request: { originalUrl?: string; url?: string }): string {
  const url = request.originalUrl ?? request.url ?? '/';
  return url.split('?')[0].replace(/\/+$/, '');
}

/** A bad key or option (a key too long, say) is the client's error: 400 with its message. */
async function clientErrors<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof LockUsageError) {
      throw new BadRequestException(error.message);
    }
    throw error;
  }
}

/** The controller class for a board mounted at `path` (each mount its own class, its own route). */
export function boardController(path: string): Type<unknown> {
  @Controller(path)
  @UseGuards(BoardGuard)
  class LockBoardController {
    private readonly logger = new Logger('LockBoard');

    constructor(
      @Inject(BoardData) private readonly board: BoardData,
      @Inject(BOARD_OPTIONS) private readonly options: ResolvedBoardOptions,
    ) {}

    @Get()
    @Header('Content-Type', 'text/html; charset=utf-8')
    @Header('Content-Security-Policy', BOARD_CSP)
    @Header('X-Frame-Options', 'DENY')
    @Header('Referrer-Policy', 'no-referrer')
    @Header('Cache-Control', 'no-store')
    page(@Req() request: { originalUrl?: string; url?: string }): string {
      return boardHtml(basePathOf(request), { readOnly: this.options.readOnly, title: this.options.title });
    }

    @Get('board.js')
    @Header('Content-Type', 'application/javascript; charset=utf-8')
    @Header('Cache-Control', 'no-cache')
    script(): string {
      return BOARD_SCRIPT;
    }

    @Get('board.css')
    @Header('Content-Type', 'text/css; charset=utf-8')
    @Header('Cache-Control', 'no-cache')
    style(): string {
      return BOARD_STYLE;
    }

    @Get('api/locks')
    @Header('Cache-Control', 'no-store')
    list(@Query('filter') filter: unknown): Promise<BoardView> {
      if (filter !== undefined && (typeof filter !== 'string' || filter.length > MAX_FILTER)) {
        throw new BadRequestException(`filter must be one text of at most ${MAX_FILTER} characters.`);
      }
      return clientErrors(() => this.board.view(filter ?? ''));
    }

    @Get('api/locks/:key')
    @Header('Cache-Control', 'no-store')
    async one(@Param('key') key: string): Promise<BoardLock> {
      const lock = await clientErrors(() => this.board.lock(key));
      if (!lock) throw new NotFoundException(`No live lock ${quote(key)}: nobody holds it or waits for it.`);
      return lock;
    }

    @Post('api/locks/:key/release')
    @HttpCode(200)
    async release(
      @Param('key') key: string,
      @Body() body: unknown,
      @Headers('x-lock-board') marker: unknown,
    ): Promise<{ released: boolean }> {
      if (this.options.readOnly) {
        throw new ForbiddenException(
          'The lock board is read-only: mount it with readOnly: false to force releases.',
        );
      }
      // A header a plain form or image cannot send: a page of another site cannot make a browser ask.
      if (marker !== '1') throw new BadRequestException('A forced release needs the header x-lock-board: 1.');
      const token = (body as { token?: unknown } | undefined)?.token;
      if (typeof token !== 'string' || token === '') {
        throw new BadRequestException(
          'A forced release needs a JSON body {"token": "<the holder\'s token>"}.',
        );
      }
      const released = await clientErrors(() => this.board.forceRelease(key, token));
      this.logger.warn(
        `Forced release of lock ${quote(key)} held by ${quote(token)}: ${released ? 'released' : 'it did not hold it'}`,
      );
      return { released };
    }
  }
  return LockBoardController;
}
