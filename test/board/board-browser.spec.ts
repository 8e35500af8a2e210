// The lock board in a real browser (Debian's chromium driven by playwright-core; no browser download):
// two application instances, one on Express and one on Fastify, with a guard; a holder and three
// waiters from both; the page shows the holder and the line in order, follows the release, refuses
// without credentials, and shows a hostile key as text without running it.
import { existsSync } from 'node:fs';
import { describe, expect, it } from '@jest/globals';
import { type Browser, chromium, type Page } from 'playwright-core';
import { until } from '../support/lock-fixtures';
import { useRedis } from '../support/redis-server';
import { boardApp, TokenGuard } from './board-apps';

// The page's globals, for the functions evaluated in it (this project's types are Node's, not the DOM's).
interface PageElement {
  readonly dataset: Record<string, string | undefined>;
  readonly textContent: string | null;
  querySelectorAll(selector: string): Iterable<PageElement> & ArrayLike<PageElement>;
}
declare const document: PageElement;

const server = useRedis();
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const found = existsSync(CHROMIUM);
const test = found ? it : it.skip;
const because = found ? '' : ` [skipped: no chromium at ${CHROMIUM}; install Debian's chromium package]`;

async function launch(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

/** The tokens the page shows for `key`: its holders, then its line in order. */
function shown(page: Page, key: string): Promise<{ holders: string[]; queue: string[] }> {
  return page.evaluate((wanted) => {
    const rows = [...document.querySelectorAll('[data-testid="lock-row"]')];
    const row = rows.find((r) => r.dataset.key === wanted);
    const tokens = (id: string) =>
      row ? [...row.querySelectorAll(`[data-testid="${id}"]`)].map((e) => e.dataset.token ?? '') : [];
    return { holders: tokens('holder'), queue: tokens('queue-entry') };
  }, key);
}

describe('the lock board in chromium', () => {
  test(`shows the holder and the line in order, follows a release, refuses without credentials, keeps a hostile key as text${because}`, async () => {
    const a = await boardApp(server().url, 'express', { guard: TokenGuard }, true);
    const b = await boardApp(server().url, 'fastify', { guard: TokenGuard }, true);
    const held = await a.locks.acquire('order:42');
    const waits = [];
    for (const [i, instance] of [a, b, a].entries()) {
      waits.push(instance.locks.acquire('order:42', { waitTimeout: 60_000 }));
      await until(
        () => a.locks.inspect('order:42'),
        (info) => info.queueLength === i + 1,
      );
    }
    const line = ((await a.locks.inspect('order:42')).waiting ?? []).map((w) => w.token);
    const hostile = '<img src=x onerror=alert(1)>';
    const hostileLease = await b.locks.acquire(hostile);

    const browser = await launch();
    try {
      // Without credentials: refused, page and API alike.
      const stranger = await browser.newPage();
      expect((await stranger.goto(`${a.address}/locks`))?.status()).toBe(403);
      expect((await stranger.goto(`${b.address}/locks/api/locks`))?.status()).toBe(403);
      await stranger.close();

      for (const address of [a.address, b.address]) {
        const context = await browser.newContext({ extraHTTPHeaders: { authorization: 'Bearer s3cret' } });
        const page = await context.newPage();
        const problems: string[] = [];
        let dialogs = 0;
        page.on('console', (message) => {
          if (message.type() === 'error') problems.push(message.text());
        });
        page.on('pageerror', (error) => problems.push(error.message));
        page.on('dialog', (dialog) => {
          dialogs++;
          void dialog.dismiss();
        });
        expect((await page.goto(`${address}/locks`))?.status()).toBe(200);
        await page.waitForFunction(
          () => document.querySelectorAll('[data-testid="queue-entry"]').length >= 3,
        );
        const first = await shown(page, 'order:42');
        expect(first.holders).toEqual([held.token]);
        expect(first.queue).toEqual(line);

        // The hostile key is shown as text: no element made of it, nothing run.
        const keyText = await page.evaluate((wanted) => {
          const rows = [...document.querySelectorAll('[data-testid="lock-row"]')];
          return rows.find((r) => r.dataset.key === wanted)?.textContent ?? '';
        }, hostile);
        expect(keyText).toContain(hostile);
        expect(await page.evaluate(() => document.querySelectorAll('img').length)).toBe(0);
        expect(dialogs).toBe(0);
        expect(problems).toEqual([]);
        await context.close();
      }

      // The page follows the lock: the holder releases, the first waiter holds, two wait.
      const context = await browser.newContext({ extraHTTPHeaders: { authorization: 'Bearer s3cret' } });
      const page = await context.newPage();
      await page.goto(`${b.address}/locks`);
      await page.waitForFunction(() => document.querySelectorAll('[data-testid="queue-entry"]').length >= 3);
      await held.release();
      const next = await waits[0];
      expect(next.token).toBe(line[0]);
      await page.waitForFunction(
        (token) =>
          [...document.querySelectorAll('[data-testid="holder"]')].some((h) => h.dataset.token === token),
        next.token,
      );
      expect(await shown(page, 'order:42')).toEqual({ holders: [next.token], queue: line.slice(1) });
      if (process.env.BOARD_SCREENSHOT)
        await page.screenshot({ path: process.env.BOARD_SCREENSHOT, fullPage: true });
      await context.close();
      await next.release();
      await (await waits[1]).release();
      await (await waits[2]).release();
      await hostileLease.release();
    } finally {
      await browser.close();
    }
  }, 60_000);
});
