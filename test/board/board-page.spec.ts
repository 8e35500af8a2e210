import { Script } from 'node:vm';
import { describe, expect, it } from '@jest/globals';
import { BOARD_SCRIPT, BOARD_STYLE, boardHtml, escapeHtml } from '../../lib/board/board-page';

const hostile = `"><script>alert(1)</script>'`;

describe('the lock board page', () => {
  it('escapes &, <, >, " and \'', () => {
    expect(escapeHtml(`<a href="x">&'</a>`)).toBe('&lt;a href=&quot;x&quot;&gt;&amp;&#39;&lt;/a&gt;');
  });

  it('escapes a hostile base path and title wherever it puts them', () => {
    const html = boardHtml(`/x${hostile}`, { readOnly: false, title: hostile });
    expect(html).not.toContain(hostile);
    expect(html).not.toContain('<script>alert');
    expect(html).toContain('<title>&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;&#39;</title>');
    expect(html).toContain('data-base="/x&quot;&gt;&lt;script&gt;');
  });

  it('links its two assets under the base and has no inline script or style', () => {
    const html = boardHtml('/locks', { readOnly: true });
    expect(html).toContain('<link rel="stylesheet" href="/locks/board.css">');
    expect(html).toContain('<script src="/locks/board.js" defer></script>');
    expect(html).toContain('data-base="/locks" data-read-only="true"');
    expect(boardHtml('/locks', { readOnly: false })).toContain('data-read-only="false"');
    expect(html.match(/<script[^>]*>([\s\S]*?)<\/script>/g)).toEqual([
      '<script src="/locks/board.js" defer></script>',
    ]);
    expect(html).not.toMatch(/<style|\sstyle=|\son[a-z]+=/i);
  });

  it('builds its content with DOM calls only, and parses', () => {
    for (const banned of [
      'innerHTML',
      'insertAdjacentHTML',
      'outerHTML',
      'document.write',
      'eval(',
      'new Function',
    ]) {
      expect(BOARD_SCRIPT).not.toContain(banned);
    }
    expect(() => new Script(BOARD_SCRIPT)).not.toThrow();
    expect(BOARD_SCRIPT).toMatch(/^[\x20-\x7e\n]*$/);
    expect(BOARD_STYLE).not.toMatch(/url\(|@import/);
  });
});
