import { chromium, type Browser } from 'playwright-core';

/** Debian's Chromium; Playwright's own browser download cannot work here. */
export const CHROMIUM_PATH = process.env.TRAINBENCH_CHROMIUM ?? '/usr/bin/chromium';

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--no-first-run',
    ],
  });
}
