import { type Browser, chromium } from "playwright-core";

/**
 * Debian's Chromium (installed by `npm run setup`; CHROMIUM_PATH points
 * elsewhere), headless, with the flags that keep it off the network.
 */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
}
